//! Halo exchange plans: which strided regions of which fields travel to which neighbour, and the
//! packing of those regions into (and out of) one contiguous message per neighbour rank.
//!
//! No transport here: a plan says, for one process, the byte size of the message to and from
//! every neighbour rank and where each field's region sits in it; the caller (the Python layer,
//! over MPI) moves the bytes. Both ends order the regions of a message the same way (by the
//! sender's direction, then by field), so a message needs no header.
//!
//! Along a decomposed dim a field has `halo = (lo, hi)` allocated points on each side and an
//! interior of the block's length, or one more for a staggered field (faces: the last interior
//! point is the next block's first). The exchange fills `widths = (lo, hi) <= halo` points on
//! each side: the low halo from the low neighbour's last interior points, the high halo from the
//! high neighbour's first points past the shared face. Axes that are not decomposed travel
//! whole (halo included).

use crate::distribution::decomposition::Decomposition;
use crate::error::{Error, Result};

/// Messages larger than this are packed by several threads.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
/// Bytes each parallel packing task copies, about.
const TASK_BYTES: usize = 1 << 18;

/// One field as the exchange sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// Array shape, halo included.
    pub shape: Vec<usize>,
    /// Byte strides per axis (non-zero on axes longer than one).
    pub strides: Vec<isize>,
    /// Bytes per element.
    pub itemsize: usize,
    /// For every decomposed dim, the array axis that holds it (`None`: the field has no such
    /// dim and is the same on every process along it).
    pub axes: Vec<Option<usize>>,
    /// Allocated halo `(lo, hi)` per decomposed dim.
    pub halo: Vec<(usize, usize)>,
    /// Exchanged widths `(lo, hi)` per decomposed dim, each at most the halo.
    pub widths: Vec<(usize, usize)>,
}

impl FieldLayout {
    /// Axes in memory order, outermost (largest stride) first: the order in which regions of
    /// this field are laid out in messages. Ties keep the array order.
    pub fn memory_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.shape.len()).collect();
        order.sort_by_key(|&a| std::cmp::Reverse(self.strides[a].unsigned_abs()));
        order
    }
}

/// A box of one field and how to walk it in memory order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Index of the field in the plan's list.
    pub field: usize,
    /// Direction of the neighbour this region goes to (send) or comes from (receive).
    pub direction: Vec<i8>,
    /// First index of the box per array axis.
    pub start: Vec<usize>,
    /// Length of the box per array axis.
    pub count: Vec<usize>,
    /// Byte offset of the box's first element from the field's element zero.
    pub base: isize,
    /// Counts of the walk, outermost first (axes of length one dropped, contiguous axes merged).
    pub walk_counts: Vec<usize>,
    /// Byte strides of the walk, matching `walk_counts`.
    pub walk_strides: Vec<isize>,
    /// Bytes of the contiguous run copied at every step of the walk.
    pub run: usize,
    /// Byte offset of this region in its message.
    pub offset: usize,
    /// Bytes of this region.
    pub nbytes: usize,
}

/// Everything exchanged with one neighbour rank, in both directions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The neighbour's rank (this process's own rank for periodic wrap onto itself).
    pub peer: usize,
    /// Regions packed into the message sent to `peer`, in message order.
    pub send: Vec<Region>,
    /// Regions unpacked from the message received from `peer`, in message order.
    pub recv: Vec<Region>,
    /// Bytes sent.
    pub send_bytes: usize,
    /// Bytes received.
    pub recv_bytes: usize,
    /// The send regions grouped into lockstep sweeps (see [`Sweep`]).
    pub send_sweeps: Vec<Sweep>,
    /// The receive regions grouped into lockstep sweeps.
    pub recv_sweeps: Vec<Sweep>,
}

/// One region of a [`Sweep`]: where its rows are in its field and in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepMember {
    /// Index of the field.
    pub field: usize,
    /// Byte offset of the region's first element from the field's element zero.
    pub base: isize,
    /// Index of the message in [`ExchangePlan::messages`].
    pub message: usize,
    /// Byte offset of the region in the message.
    pub offset: usize,
}

/// Regions with the same walk (counts, strides, run), copied in lockstep: at every step of the
/// walk, one run of every member. Regions of one field that share rows in memory (on an I-unit
/// layout, the low and the high side of every row along I) are then read and written in one
/// pass in memory order, instead of one pass per region each a cache miss per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sweep {
    /// Counts of the walk, outermost first (as [`Region::walk_counts`]).
    pub walk_counts: Vec<usize>,
    /// Byte strides of the walk.
    pub walk_strides: Vec<isize>,
    /// Bytes of the contiguous run of every member at every step.
    pub run: usize,
    /// The regions, in memory order (by field, then base).
    pub members: Vec<SweepMember>,
}

impl Sweep {
    /// Bytes each member copies.
    fn member_bytes(&self) -> usize {
        self.walk_counts.iter().product::<usize>() * self.run
    }
}

/// The halo exchange of a list of fields on one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangePlan {
    /// This process's rank.
    pub rank: usize,
    /// One entry per neighbour rank with something to exchange, by rank.
    pub messages: Vec<Message>,
    /// Number of fields.
    pub nfields: usize,
    /// Stagger (0 or 1) of every field along every decomposed dim it has.
    pub stagger: Vec<Vec<usize>>,
    /// The send regions of every message to another process, as lockstep sweeps
    /// ([`ExchangePlan::pack_all`]).
    pub send_sweeps: Vec<Sweep>,
    /// The receive regions of every message from another process ([`ExchangePlan::unpack_all`]).
    pub recv_sweeps: Vec<Sweep>,
}

fn field_err(f: usize, value: impl std::fmt::Debug, expected: String) -> Error {
    Error::invalid(format!("fields[{f}]"), value, expected)
}

/// Checks one field against the decomposition at `coords`; returns its stagger per dim.
fn check_field(
    decomp: &Decomposition,
    coords: &[usize],
    f: usize,
    fl: &FieldLayout,
) -> Result<Vec<usize>> {
    let nd = decomp.ndim();
    let names = decomp.names();
    let ndim = fl.shape.len();
    if fl.strides.len() != ndim {
        return Err(field_err(
            f,
            &fl.strides,
            format!("expected {ndim} strides, one per axis"),
        ));
    }
    if fl.itemsize == 0 {
        return Err(field_err(
            f,
            fl.itemsize,
            "itemsize must be positive".into(),
        ));
    }
    for (what, len) in [
        ("axes", fl.axes.len()),
        ("halo", fl.halo.len()),
        ("widths", fl.widths.len()),
    ] {
        if len != nd {
            return Err(field_err(
                f,
                len,
                format!("expected {what} for each of the {nd} decomposed dims"),
            ));
        }
    }
    for a in 0..ndim {
        if fl.shape[a] > 1 && fl.strides[a] == 0 {
            return Err(field_err(
                f,
                &fl.strides,
                "a broadcast (zero-stride) axis cannot receive a halo".into(),
            ));
        }
    }
    let mut stagger = vec![0; nd];
    for d in 0..nd {
        let Some(a) = fl.axes[d] else { continue };
        if a >= ndim || fl.axes.iter().filter(|&&x| x == Some(a)).count() > 1 {
            return Err(field_err(
                f,
                &fl.axes,
                format!("axis for {} must be a distinct axis below {ndim}", names[d]),
            ));
        }
        let (hl, hh) = fl.halo[d];
        let (wl, wh) = fl.widths[d];
        let block = decomp.block_len(d, coords[d]);
        let interior = fl.shape[a]
            .checked_sub(hl)
            .and_then(|x| x.checked_sub(hh))
            .ok_or_else(|| {
                field_err(
                    f,
                    fl.halo[d],
                    format!(
                        "the halo along {} is larger than the axis length {}",
                        names[d], fl.shape[a]
                    ),
                )
            })?;
        if interior != block && interior != block + 1 {
            return Err(field_err(
                f,
                &fl.shape,
                format!(
                    "along {} the interior has {interior} points but this process's block has \
                     {block} (or {} for a staggered field); halo {:?}",
                    names[d],
                    block + 1,
                    fl.halo[d]
                ),
            ));
        }
        stagger[d] = interior - block;
        if wl > hl || wh > hh {
            return Err(Error::invalid(
                format!("widths of fields[{f}] along {}", names[d]),
                fl.widths[d],
                format!("widths may not exceed the field's halo {:?}", fl.halo[d]),
            ));
        }
        for (dir, w, side) in [(-1i8, wl, "low"), (1, wh, "high")] {
            let mut off = vec![0i8; nd];
            off[d] = dir;
            if let Some(nc) = decomp.shift(coords, &off) {
                let n = decomp.block_len(d, nc[d]);
                if w > n {
                    return Err(Error::invalid(
                        format!("widths of fields[{f}] along {}", names[d]),
                        fl.widths[d],
                        format!(
                            "the {side} width exceeds the {n} interior points of the neighbour \
                             (process coordinate {}) it is copied from",
                            nc[d]
                        ),
                    ));
                }
            }
        }
    }
    Ok(stagger)
}

/// The box a field sends to (`send`) or receives from the neighbour at `offset`; `None` when
/// the field takes no part in that direction.
fn region_box(
    decomp: &Decomposition,
    coords: &[usize],
    fl: &FieldLayout,
    stagger: &[usize],
    offset: &[i8],
    send: bool,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut start: Vec<usize> = vec![0; fl.shape.len()];
    let mut count = fl.shape.clone();
    for d in 0..decomp.ndim() {
        let Some(a) = fl.axes[d] else {
            if offset[d] != 0 {
                return None;
            }
            continue;
        };
        let (hl, _) = fl.halo[d];
        let (wl, wh) = fl.widths[d];
        let n = decomp.block_len(d, coords[d]);
        let st = stagger[d];
        let (s, c) = match (offset[d], send) {
            (0, _) => (hl, n + st),
            (-1, true) => (hl + st, wh),
            (1, true) => (hl + n - wl, wl),
            (-1, false) => (hl - wl, wl),
            (_, false) => (hl + n + st, wh),
            _ => unreachable!(),
        };
        start[a] = s;
        count[a] = c;
    }
    Some((start, count))
}

/// Builds the memory-order walk of a box.
fn make_region(
    f: usize,
    fl: &FieldLayout,
    direction: &[i8],
    start: Vec<usize>,
    count: Vec<usize>,
) -> Result<Region> {
    let mut base: isize = 0;
    for (&i, &stride) in start.iter().zip(&fl.strides) {
        let step = isize::try_from(i)
            .ok()
            .and_then(|s| s.checked_mul(stride))
            .ok_or_else(|| {
                Error::overflow(format!("fields[{f}] strides"), &fl.strides, "an offset")
            })?;
        base = base.checked_add(step).ok_or_else(|| {
            Error::overflow(format!("fields[{f}] strides"), &fl.strides, "an offset")
        })?;
    }
    let elements = count
        .iter()
        .try_fold(1usize, |acc, &c| acc.checked_mul(c))
        .ok_or_else(|| Error::overflow(format!("fields[{f}] shape"), &fl.shape, "a region"))?;
    let nbytes = elements
        .checked_mul(fl.itemsize)
        .ok_or_else(|| Error::overflow(format!("fields[{f}] shape"), &fl.shape, "a region"))?;
    // Walk: outermost first, length-one axes dropped, then contiguous neighbours merged.
    let mut walk: Vec<(usize, isize)> = fl
        .memory_order()
        .into_iter()
        .filter(|&a| count[a] > 1)
        .map(|a| (count[a], fl.strides[a]))
        .collect();
    let mut merged: Vec<(usize, isize)> = Vec::with_capacity(walk.len());
    for (c, s) in walk.drain(..) {
        if let Some(last) = merged.last_mut() {
            if last.1 == s * c as isize {
                *last = (last.0 * c, s);
                continue;
            }
        }
        merged.push((c, s));
    }
    let mut run = fl.itemsize;
    if let Some(&(c, s)) = merged.last() {
        if s == fl.itemsize as isize {
            run = c * fl.itemsize;
            merged.pop();
        }
    }
    if elements == 0 {
        merged.clear();
        run = 0;
    }
    Ok(Region {
        field: f,
        direction: direction.to_vec(),
        start,
        count,
        base,
        walk_counts: merged.iter().map(|w| w.0).collect(),
        walk_strides: merged.iter().map(|w| w.1).collect(),
        run,
        offset: 0,
        nbytes,
    })
}

impl ExchangePlan {
    /// Plans the exchange of `fields` on process `rank` of `decomp`.
    ///
    /// Every process must pass fields that agree (same list, dtypes, widths, layouts in memory
    /// order, stagger); the caller checks that across processes. Checked here: the field
    /// descriptions, that each interior matches the block (or the block plus one), that widths
    /// fit the halo and the neighbour's interior.
    pub fn new(
        decomp: &Decomposition,
        rank: usize,
        fields: &[FieldLayout],
        corners: bool,
    ) -> Result<ExchangePlan> {
        let coords = decomp.coords(rank)?;
        let stagger = fields
            .iter()
            .enumerate()
            .map(|(f, fl)| check_field(decomp, &coords, f, fl))
            .collect::<Result<Vec<_>>>()?;
        let mut messages: Vec<Message> = Vec::new();
        for nb in decomp.neighbours(rank, corners)? {
            let back: Vec<i8> = nb.offset.iter().map(|&o| -o).collect();
            let idx = match messages.iter().position(|m| m.peer == nb.rank) {
                Some(i) => i,
                None => {
                    messages.push(Message {
                        peer: nb.rank,
                        send: Vec::new(),
                        recv: Vec::new(),
                        send_bytes: 0,
                        recv_bytes: 0,
                        send_sweeps: Vec::new(),
                        recv_sweeps: Vec::new(),
                    });
                    messages.len() - 1
                }
            };
            for (f, fl) in fields.iter().enumerate() {
                if let Some((s, c)) = region_box(decomp, &coords, fl, &stagger[f], &nb.offset, true)
                {
                    let r = make_region(f, fl, &nb.offset, s, c)?;
                    if r.nbytes > 0 {
                        messages[idx].send.push(r);
                    }
                }
                if let Some((s, c)) =
                    region_box(decomp, &coords, fl, &stagger[f], &nb.offset, false)
                {
                    // Ordered by the sender's direction, the opposite of ours.
                    let r = make_region(f, fl, &back, s, c)?;
                    if r.nbytes > 0 {
                        messages[idx].recv.push(r);
                    }
                }
            }
        }
        for m in &mut messages {
            for list in [&mut m.send, &mut m.recv] {
                list.sort_by(|a, b| (&a.direction, a.field).cmp(&(&b.direction, b.field)));
            }
            m.send_bytes = assign_offsets(&mut m.send)?;
            m.recv_bytes = assign_offsets(&mut m.recv)?;
        }
        messages.retain(|m| m.send_bytes > 0 || m.recv_bytes > 0);
        messages.sort_by_key(|m| m.peer);
        for i in 0..messages.len() {
            messages[i].send_sweeps = sweeps(&messages, &[i], true);
            messages[i].recv_sweeps = sweeps(&messages, &[i], false);
        }
        let remote: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].peer != rank)
            .collect();
        Ok(ExchangePlan {
            rank,
            send_sweeps: sweeps(&messages, &remote, true),
            recv_sweeps: sweeps(&messages, &remote, false),
            messages,
            nfields: fields.len(),
            stagger,
        })
    }

    /// Copies the send regions of message `msg` out of the fields into `buf`; with `parallel`,
    /// messages of a mebibyte or more are split over gridbuf's thread pool
    /// ([`crate::runtime::threads`], `GRIDBUF_NUM_THREADS`).
    ///
    /// # Safety
    /// `bases[f]` must point at element zero of field `f`, live for the call, with the shape,
    /// strides and itemsize the plan was built from; `buf` must not overlap any field.
    ///
    /// # Panics
    /// If `buf.len()` differs from the message's `send_bytes` or `bases` has the wrong length.
    pub unsafe fn pack(&self, msg: usize, bases: &[*const u8], buf: &mut [u8], parallel: bool) {
        let m = &self.messages[msg];
        assert_eq!(buf.len(), m.send_bytes, "send buffer size");
        assert_eq!(bases.len(), self.nfields, "one base pointer per field");
        let mut bufs = vec![0usize; self.messages.len()];
        bufs[msg] = buf.as_mut_ptr() as usize;
        let fields: Vec<usize> = bases.iter().map(|&p| p as usize).collect();
        let parallel = parallel && m.send_bytes >= PARALLEL_MIN_BYTES;
        // SAFETY: the caller guarantees the field memory; the sweeps' regions lie inside the
        // fields (built inside the shape) and their bytes inside `buf` (offsets sum to its size).
        unsafe { run_sweeps::<true>(&m.send_sweeps, &fields, &bufs, parallel) };
    }

    /// Copies message `msg`'s received bytes in `buf` into the fields' halos (`parallel` as in
    /// [`ExchangePlan::pack`]).
    ///
    /// # Safety
    /// As [`ExchangePlan::pack`], with `bases[f]` writable; regions of different fields must not
    /// overlap (distinct arrays).
    ///
    /// # Panics
    /// If `buf.len()` differs from the message's `recv_bytes` or `bases` has the wrong length.
    pub unsafe fn unpack(&self, msg: usize, bases: &[*mut u8], buf: &[u8], parallel: bool) {
        let m = &self.messages[msg];
        assert_eq!(buf.len(), m.recv_bytes, "receive buffer size");
        assert_eq!(bases.len(), self.nfields, "one base pointer per field");
        let mut bufs = vec![0usize; self.messages.len()];
        bufs[msg] = buf.as_ptr() as usize;
        let fields: Vec<usize> = bases.iter().map(|&p| p as usize).collect();
        let parallel = parallel && m.recv_bytes >= PARALLEL_MIN_BYTES;
        // SAFETY: as in `pack`; receive regions of one message are disjoint halo boxes.
        unsafe { run_sweeps::<false>(&m.recv_sweeps, &fields, &bufs, parallel) };
    }

    /// Packs every message to another process in one pass over the fields (the sweeps of
    /// [`ExchangePlan::send_sweeps`]: rows that lie side by side in memory are read together
    /// even when they go to different neighbours); `bufs[i]` is the send buffer of message `i`
    /// (ignored for a message to this process itself). `parallel` as in [`ExchangePlan::pack`],
    /// for a mebibyte or more in all.
    ///
    /// # Safety
    /// As [`ExchangePlan::pack`], for every buffer.
    ///
    /// # Panics
    /// If `bufs` does not have one buffer per message, one of `send_bytes` for every message
    /// to another process, or `bases` has the wrong length.
    pub unsafe fn pack_all(&self, bases: &[*const u8], bufs: &mut [&mut [u8]], parallel: bool) {
        assert_eq!(bases.len(), self.nfields, "one base pointer per field");
        let addrs = self.buffer_addrs(bufs.iter_mut().map(|b| (b.len(), b.as_mut_ptr() as usize)));
        let total: usize = self.remote().map(|m| m.send_bytes).sum();
        let fields: Vec<usize> = bases.iter().map(|&p| p as usize).collect();
        let parallel = parallel && total >= PARALLEL_MIN_BYTES;
        // SAFETY: as in `pack`; every buffer was checked to hold its message.
        unsafe { run_sweeps::<true>(&self.send_sweeps, &fields, &addrs, parallel) };
    }

    /// Unpacks every message from another process in one pass over the fields
    /// ([`ExchangePlan::recv_sweeps`]); `bufs[i]` is the receive buffer of message `i` (ignored
    /// for a message to this process itself). `parallel` as in [`ExchangePlan::pack_all`].
    ///
    /// # Safety
    /// As [`ExchangePlan::unpack`], for every buffer.
    ///
    /// # Panics
    /// If `bufs` does not have one buffer per message, one of `recv_bytes` for every message
    /// from another process, or `bases` has the wrong length.
    pub unsafe fn unpack_all(&self, bases: &[*mut u8], bufs: &[&[u8]], parallel: bool) {
        assert_eq!(bases.len(), self.nfields, "one base pointer per field");
        assert_eq!(bufs.len(), self.messages.len(), "one buffer per message");
        for (m, b) in self.messages.iter().zip(bufs) {
            if m.peer != self.rank {
                assert_eq!(b.len(), m.recv_bytes, "receive buffer size");
            }
        }
        let addrs: Vec<usize> = bufs.iter().map(|b| b.as_ptr() as usize).collect();
        let total: usize = self.remote().map(|m| m.recv_bytes).sum();
        let fields: Vec<usize> = bases.iter().map(|&p| p as usize).collect();
        let parallel = parallel && total >= PARALLEL_MIN_BYTES;
        // SAFETY: as in `unpack`; every buffer was checked to hold its message.
        unsafe { run_sweeps::<false>(&self.recv_sweeps, &fields, &addrs, parallel) };
    }

    /// The messages to other processes.
    fn remote(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(|m| m.peer != self.rank)
    }

    /// Addresses of the send buffers given as `(len, address)`, checked against the messages.
    fn buffer_addrs(&self, bufs: impl ExactSizeIterator<Item = (usize, usize)>) -> Vec<usize> {
        assert_eq!(bufs.len(), self.messages.len(), "one buffer per message");
        self.messages
            .iter()
            .zip(bufs)
            .map(|(m, (len, addr))| {
                if m.peer != self.rank {
                    assert_eq!(len, m.send_bytes, "send buffer size");
                }
                addr
            })
            .collect()
    }
}

impl ExchangePlan {
    /// For a message to this process itself (periodic wrap onto one process): copies every send
    /// region straight into the matching receive region, without a buffer.
    ///
    /// # Safety
    /// As [`ExchangePlan::unpack`].
    ///
    /// # Panics
    /// If message `msg` is not addressed to this process or `bases` has the wrong length.
    pub unsafe fn copy_local(&self, msg: usize, bases: &[*mut u8]) {
        let m = &self.messages[msg];
        assert_eq!(
            m.peer, self.rank,
            "copy_local needs a message to this process"
        );
        assert_eq!(bases.len(), self.nfields, "one base pointer per field");
        for (s, r) in m.send.iter().zip(&m.recv) {
            // The two boxes of one pair have the same field, counts and strides, so the same
            // walk; they differ only in their base (interior vs halo: disjoint since widths do
            // not exceed the interior).
            debug_assert_eq!(
                (s.field, &s.walk_counts, s.run),
                (r.field, &r.walk_counts, r.run)
            );
            let base = bases[s.field];
            // SAFETY: both boxes lie inside the field (caller's contract) and do not overlap.
            unsafe { copy_walk(s, base as *const u8, base.offset(r.base - s.base)) };
        }
    }
}

/// Copies the box `r` of the field at `src` to the same walk at `dst` (offsets relative to
/// element zero of each).
///
/// # Safety
/// Every run of the walk must be valid at both, and the two must not overlap.
unsafe fn copy_walk(r: &Region, src: *const u8, dst: *mut u8) {
    if r.nbytes == 0 {
        return;
    }
    let nd = r.walk_counts.len();
    let run = r.run;
    let mut idx = vec![0usize; nd];
    let mut off = r.base;
    loop {
        // SAFETY: `off` addresses a run of the box (caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src.offset(off), dst.offset(off), run) };
        // Odometer, innermost walk axis first.
        let mut d = nd;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            off += r.walk_strides[d];
            if idx[d] < r.walk_counts[d] {
                break;
            }
            off -= idx[d] as isize * r.walk_strides[d];
            idx[d] = 0;
        }
    }
}

fn assign_offsets(regions: &mut [Region]) -> Result<usize> {
    let mut off = 0usize;
    for r in regions {
        r.offset = off;
        off = off
            .checked_add(r.nbytes)
            .ok_or_else(|| Error::overflow("fields", r.nbytes, "a message size"))?;
    }
    Ok(off)
}

/// Groups the send (or receive) regions of messages `which` into sweeps: regions of one field
/// with the same walk become members of one sweep, in memory order; sweeps in the order of
/// their first member.
fn sweeps(messages: &[Message], which: &[usize], send: bool) -> Vec<Sweep> {
    let mut out: Vec<Sweep> = Vec::new();
    for &i in which {
        let m = &messages[i];
        for r in if send { &m.send } else { &m.recv } {
            let member = SweepMember {
                field: r.field,
                base: r.base,
                message: i,
                offset: r.offset,
            };
            let same = out.iter_mut().find(|s| {
                s.members[0].field == r.field
                    && s.run == r.run
                    && s.walk_counts == r.walk_counts
                    && s.walk_strides == r.walk_strides
            });
            match same {
                Some(s) => s.members.push(member),
                None => out.push(Sweep {
                    walk_counts: r.walk_counts.clone(),
                    walk_strides: r.walk_strides.clone(),
                    run: r.run,
                    members: vec![member],
                }),
            }
        }
    }
    for s in &mut out {
        s.members.sort_by_key(|m| (m.field, m.base));
    }
    out.sort_by_key(|s| (s.members[0].field, s.members[0].base));
    out
}

/// Members copied together in one pass; a sweep with more is copied in groups of this many.
const LANES: usize = 8;

/// Copies every sweep between the fields at `fields[f]` and the messages at `bufs[i]`: into the
/// messages when `PACK`, out of them otherwise; on the thread pool when `parallel`.
///
/// # Safety
/// Every member's runs must be valid bytes of its field and `member_bytes` from its offset
/// valid bytes of its message; fields and messages must not overlap, nor (unpacking) the
/// members' boxes.
unsafe fn run_sweeps<const PACK: bool>(
    sweeps: &[Sweep],
    fields: &[usize],
    bufs: &[usize],
    parallel: bool,
) {
    if parallel {
        let mut tasks: Vec<(usize, usize, usize)> = Vec::new();
        for (i, s) in sweeps.iter().enumerate() {
            let outer = s.walk_counts.first().copied().unwrap_or(1);
            let bytes = s.member_bytes() * s.members.len();
            let parts = (bytes / TASK_BYTES).clamp(1, outer.max(1));
            for p in 0..parts {
                let (lo, hi) = (outer * p / parts, outer * (p + 1) / parts);
                if hi > lo {
                    tasks.push((i, lo, hi));
                }
            }
        }
        crate::runtime::threads::run_each(
            crate::runtime::threads::configured(),
            tasks,
            |(i, lo, hi)| {
                // SAFETY: caller's contract; tasks of one sweep cover disjoint outer ranges.
                unsafe { copy_sweep::<PACK>(&sweeps[i], (lo, hi), fields, bufs) }
            },
        );
    } else {
        for s in sweeps {
            let outer = s.walk_counts.first().copied().unwrap_or(1);
            // SAFETY: caller's contract.
            unsafe { copy_sweep::<PACK>(s, (0, outer), fields, bufs) };
        }
    }
}

/// Copies the indices `lo..hi` of the outermost walk axis of every member of `s` (the whole
/// member when the walk has no axis).
///
/// # Safety
/// As [`run_sweeps`].
unsafe fn copy_sweep<const PACK: bool>(
    s: &Sweep,
    (lo, hi): (usize, usize),
    fields: &[usize],
    bufs: &[usize],
) {
    let nd = s.walk_counts.len();
    let run = s.run;
    for group in s.members.chunks(LANES) {
        let g = group.len();
        let mut fp = [std::ptr::null_mut::<u8>(); LANES];
        let mut mp = [std::ptr::null_mut::<u8>(); LANES];
        for (k, m) in group.iter().enumerate() {
            // Addresses of the member's first element and first message byte; `wrapping_`
            // arithmetic only forms them, every access below is inside the member.
            fp[k] = fields[m.field].wrapping_add_signed(m.base) as *mut u8;
            mp[k] = bufs[m.message].wrapping_add(m.offset) as *mut u8;
        }
        let (fp, mp) = (&fp[..g], &mp[..g]);
        if nd == 0 {
            for k in 0..g {
                // SAFETY: the member is one contiguous run (caller's contract).
                unsafe { copy_run::<PACK>(fp[k], mp[k], run) };
            }
            continue;
        }
        let (ic, is) = (s.walk_counts[nd - 1], s.walk_strides[nd - 1]);
        if nd == 1 {
            // SAFETY: rows lo..hi of the only walk axis lie in every member and message.
            unsafe {
                lockstep::<PACK>(fp, mp, lo as isize * is, is, hi - lo, lo * run, run);
            }
            continue;
        }
        // Bytes of the message per index of the outermost walk axis.
        let outer_bytes: usize = s.walk_counts[1..].iter().product::<usize>() * run;
        let mut idx = vec![0usize; nd - 1];
        idx[0] = lo;
        let mut src = lo as isize * s.walk_strides[0];
        let mut dst = lo * outer_bytes;
        let end = hi * outer_bytes;
        while dst < end {
            // SAFETY: the rows at this odometer position lie in every member, `dst` below `end`.
            unsafe { lockstep::<PACK>(fp, mp, src, is, ic, dst, run) };
            dst += ic * run;
            // Odometer over the outer walk axes, innermost of them first.
            let mut d = nd - 2;
            loop {
                idx[d] += 1;
                src += s.walk_strides[d];
                if d == 0 || idx[d] < s.walk_counts[d] {
                    break;
                }
                src -= idx[d] as isize * s.walk_strides[d];
                idx[d] = 0;
                d -= 1;
            }
        }
    }
}

/// Copies `count` rows of `run` bytes of every member: row `i` at field offset `p + i * step`
/// from each member's first element and at message offset `dst + i * run` from its first
/// message byte; all members' row `i` before any row `i + 1`. Common run lengths go to
/// fixed-size copies (a few moves instead of a `memcpy` call).
///
/// # Safety
/// As [`run_sweeps`], for these rows.
#[inline(always)]
unsafe fn lockstep<const PACK: bool>(
    fp: &[*mut u8],
    mp: &[*mut u8],
    p: isize,
    step: isize,
    count: usize,
    dst: usize,
    run: usize,
) {
    // SAFETY: caller's contract, forwarded.
    unsafe {
        match run {
            4 => rows::<PACK, 4>(fp, mp, p, step, count, dst),
            8 => rows::<PACK, 8>(fp, mp, p, step, count, dst),
            12 => rows::<PACK, 12>(fp, mp, p, step, count, dst),
            16 => rows::<PACK, 16>(fp, mp, p, step, count, dst),
            24 => rows::<PACK, 24>(fp, mp, p, step, count, dst),
            32 => rows::<PACK, 32>(fp, mp, p, step, count, dst),
            _ => {
                let (mut p, mut dst) = (p, dst);
                for _ in 0..count {
                    for (&f, &m) in fp.iter().zip(mp) {
                        copy_run::<PACK>(f.offset(p), m.add(dst), run);
                    }
                    p += step;
                    dst += run;
                }
            }
        }
    }
}

/// [`lockstep`] for runs of `N` bytes.
///
/// # Safety
/// As [`lockstep`].
#[inline(always)]
unsafe fn rows<const PACK: bool, const N: usize>(
    fp: &[*mut u8],
    mp: &[*mut u8],
    mut p: isize,
    step: isize,
    count: usize,
    mut dst: usize,
) {
    for _ in 0..count {
        for (&f, &m) in fp.iter().zip(mp) {
            // SAFETY: caller's contract; `N` bytes at both ends.
            unsafe { copy_run::<PACK>(f.offset(p), m.add(dst), N) };
        }
        p += step;
        dst += N;
    }
}

/// Copies one run of `len` bytes from a field to a message (`PACK`) or back.
///
/// # Safety
/// `len` bytes valid at both pointers, not overlapping.
#[inline(always)]
unsafe fn copy_run<const PACK: bool>(field: *mut u8, msg: *mut u8, len: usize) {
    // SAFETY: caller's contract.
    unsafe {
        if PACK {
            std::ptr::copy_nonoverlapping(field, msg, len);
        } else {
            std::ptr::copy_nonoverlapping(msg, field, len);
        }
    }
}
