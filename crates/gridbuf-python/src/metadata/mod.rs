//! What an array says about itself besides its memory, read in one place: its dims
//! (`__gt_dims__`, the data interface's `"dims"`, an xarray `DataArray`'s `.dims`), its origin
//! (`__gt_origin__`), its halo, and the metadata a `gridbuf.Field` carries ([`FieldMeta`]).
//! The rules are the core's (`gridbuf::geometry::dims`, `origin`, `halo`, `Plan::is_whole`); this module
//! converts Python values to the names and ints they take. `gridbuf._metadata` and `gridbuf.Field` call these functions, and
//! the stencil binder reads the same values without going through Python code.
//!
//! One module per kind of label: [`dims`], [`origin`], [`halo`], the Field's [`field_meta`],
//! the data-interface [`callbacks`], the data interface a labelled array reports
//! ([`labelled_interface`]), and whole allocations and layouts ([`layout`]); what they share
//! (reading an entry, the shape an object reports) is in [`entry`].

mod callbacks;
mod dims;
mod entry;
mod field_meta;
mod halo;
mod labelled_interface;
mod layout;
mod origin;

pub(crate) use callbacks::*;
pub(crate) use dims::*;
pub(crate) use field_meta::*;
pub(crate) use halo::*;
pub(crate) use labelled_interface::*;
pub(crate) use layout::*;
pub(crate) use origin::*;
