//! What a call brings besides the arrays' memory: what each argument declares ([`ArgMeta`]),
//! the call's origin ([`CallOrigin`]), and the [`CallKey`] a checked binding depends on.

use crate::arrays::array_info::{ArrayDevice, ArrayInfo, DType};
use crate::geometry::dims::Dim;

/// What one argument says about itself besides its memory; the default declares nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ArgMeta {
    /// Dims in the array's index order, if it declares them (else the kernel's order is assumed).
    pub dims: Option<Vec<Dim>>,
    /// `__gt_origin__` in the array's index order.
    pub origin: Option<Vec<usize>>,
    /// Lower halo of its data interface, in the array's index order.
    pub halo_lower: Option<Vec<usize>>,
}

/// The origin given at the call.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum CallOrigin {
    /// None given: each field's `__gt_origin__`, else its data-interface lower halo, else zero.
    #[default]
    Default,
    /// One origin for every field, one entry per domain dim (I, J, K order). An origin may be
    /// negative where the stencil's lower extent is (see `FieldParam::extent`).
    All(Vec<isize>),
    /// Per field name; `default` (the `"_all_"` entry) for the others. Each tuple has one entry
    /// per dim of the field in the kernel's order, or one per domain dim.
    PerField {
        /// `"_all_"`: per domain dim.
        default: Option<Vec<isize>>,
        /// (field name, origin).
        fields: Vec<(String, Vec<isize>)>,
    },
}

/// Per field of a [`CallKey`]: dtype, shape, strides, device, read-only flag and declarations.
pub type FieldKey = (DType, Vec<usize>, Vec<isize>, ArrayDevice, bool, ArgMeta);

/// Everything a [`BoundCall`] depends on, the checks that ran included: a call with an equal
/// key binds identically, after the same checks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallKey {
    /// Per field: dtype, shape, strides, device and what the array declares.
    pub fields: Vec<FieldKey>,
    /// The call's origin.
    pub origin: CallOrigin,
    /// The call's domain (per domain dim), if given.
    pub domain: Option<Vec<usize>>,
    /// Whether every check ran (`validate_args`): a binding made with some checks skipped is
    /// never reused by a call that asks for them.
    pub validated: bool,
}

impl CallKey {
    /// The key of a call.
    pub fn new(
        args: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
        validated: bool,
    ) -> CallKey {
        CallKey {
            fields: args
                .iter()
                .map(|(i, m)| {
                    (
                        i.dtype,
                        i.shape.clone(),
                        i.strides.clone(),
                        i.device,
                        i.readonly,
                        (*m).clone(),
                    )
                })
                .collect(),
            origin: origin.clone(),
            domain: domain.map(<[usize]>::to_vec),
            validated,
        }
    }

    /// Whether this key equals `CallKey::new(args, origin, domain, validated)`, without building
    /// that key.
    #[inline]
    pub fn matches(
        &self,
        args: &[(&ArrayInfo, &ArgMeta)],
        origin: &CallOrigin,
        domain: Option<&[usize]>,
        validated: bool,
    ) -> bool {
        self.validated == validated
            && self.fields.len() == args.len()
            && self.fields.iter().zip(args).all(|(k, (i, m))| {
                k.0 == i.dtype
                    && k.1 == i.shape
                    && k.2 == i.strides
                    && k.3 == i.device
                    && k.4 == i.readonly
                    && k.5 == **m
            })
            && self.origin == *origin
            && self.domain.as_deref() == domain
    }
}
