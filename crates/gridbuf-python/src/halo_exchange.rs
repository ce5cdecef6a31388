//! Binding of the halo exchange plan: reads the fields' arrays, builds the core plan, owns the
//! message buffers and packs/unpacks them with the GIL released. No MPI here: the Python layer
//! (`gridbuf.distributed`) hands the buffers to mpi4py.

use crate::errors::{to_py, IntoPyResult};
use crate::extract::extract_array;
use gridbuf::arrays::array_info::DeviceKind;
use gridbuf::distribution::decomposition::Decomposition;
use gridbuf::distribution::halo_exchange::{ExchangePlan, FieldLayout};
use gridbuf::Error;
use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// The halo exchange of a list of fields on one process: message sizes, buffers, packing.
///
/// Built by :class:`gridbuf.distributed.HaloExchange`; the buffers are allocated once here and
/// reused by every exchange.
#[pyclass(name = "HaloExchangePlan", module = "gridbuf._gridbuf", frozen)]
pub struct PyHaloExchangePlan {
    plan: ExchangePlan,
    /// The objects that keep the fields' memory alive.
    _keepalive: Vec<Py<PyAny>>,
    /// Address of element zero of every field.
    bases: Vec<usize>,
    send: Vec<Py<PyArray1<u8>>>,
    recv: Vec<Py<PyArray1<u8>>>,
}

/// One field's description as given by the Python layer.
type FieldArgs = (Vec<Option<usize>>, Vec<(usize, usize)>, Vec<(usize, usize)>);

#[pymethods]
impl PyHaloExchangePlan {
    /// Plans the exchange of `fields` (arrays or Fields) on process `rank`.
    ///
    /// `specs[f]` is `(axes, halo, widths)` of field `f`, one entry per decomposed dim.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (fields, specs, names, global_shape, procs, periodic, rank, corners))]
    fn new(
        py: Python<'_>,
        fields: Vec<Bound<'_, PyAny>>,
        specs: Vec<FieldArgs>,
        names: Vec<String>,
        global_shape: Vec<usize>,
        procs: Vec<usize>,
        periodic: Vec<bool>,
        rank: usize,
        corners: bool,
    ) -> PyResult<Self> {
        if specs.len() != fields.len() {
            return Err(to_py(py, Error::exchange_specs(specs.len())));
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let decomp = Decomposition::new(&names, &global_shape, &procs, &periodic).py(py)?;
        let mut layouts = Vec::with_capacity(fields.len());
        let mut keepalive = Vec::with_capacity(fields.len());
        let mut bases = Vec::with_capacity(fields.len());
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(fields.len());
        for (f, (obj, (axes, halo, widths))) in fields.iter().zip(specs).enumerate() {
            let ex = extract_array(obj)?;
            let info = &ex.info;
            if info.device.kind != DeviceKind::Cpu {
                return Err(to_py(py, Error::exchange_field_device(f, info.device.kind)));
            }
            if info.readonly {
                return Err(to_py(py, Error::exchange_field_readonly(f)));
            }
            let itemsize = info.dtype.itemsize();
            // Byte span of the field, to refuse fields that share memory.
            let (mut lo, mut hi) = (0isize, itemsize as isize);
            for (&n, &s) in info.shape.iter().zip(&info.strides) {
                let reach = (n.saturating_sub(1) as isize).saturating_mul(s);
                if reach < 0 {
                    lo = lo.saturating_add(reach);
                } else {
                    hi = hi.saturating_add(reach);
                }
            }
            let span = (
                info.ptr.wrapping_add_signed(lo),
                info.ptr.wrapping_add_signed(hi),
            );
            if let Some(g) = spans.iter().position(|s| s.0 < span.1 && span.0 < s.1) {
                return Err(to_py(py, Error::exchange_fields_overlap(f, g)));
            }
            spans.push(span);
            layouts.push(FieldLayout {
                shape: info.shape.clone(),
                strides: info.strides.clone(),
                itemsize,
                axes,
                halo,
                widths,
            });
            bases.push(info.ptr);
            keepalive.push(ex.keepalive.unbind());
        }
        let plan = ExchangePlan::new(&decomp, rank, &layouts, corners).py(py)?;
        let mut send = Vec::with_capacity(plan.messages.len());
        let mut recv = Vec::with_capacity(plan.messages.len());
        for m in &plan.messages {
            let s = PyArray1::<u8>::zeros(py, m.send_bytes, false).unbind();
            // A message to this process itself is unpacked from the buffer it was packed into.
            let r = if m.peer == rank {
                s.clone_ref(py)
            } else {
                PyArray1::<u8>::zeros(py, m.recv_bytes, false).unbind()
            };
            send.push(s);
            recv.push(r);
        }
        Ok(PyHaloExchangePlan {
            plan,
            _keepalive: keepalive,
            bases,
            send,
            recv,
        })
    }

    /// Rank of the neighbour of every message, ascending.
    #[getter]
    fn peers(&self) -> Vec<usize> {
        self.plan.messages.iter().map(|m| m.peer).collect()
    }

    /// Bytes sent to every peer.
    #[getter]
    fn send_bytes(&self) -> Vec<usize> {
        self.plan.messages.iter().map(|m| m.send_bytes).collect()
    }

    /// Bytes received from every peer.
    #[getter]
    fn recv_bytes(&self) -> Vec<usize> {
        self.plan.messages.iter().map(|m| m.recv_bytes).collect()
    }

    /// The send buffer (uint8 array) of every message.
    #[getter]
    fn send_buffers(&self, py: Python<'_>) -> Vec<Py<PyArray1<u8>>> {
        self.send.iter().map(|b| b.clone_ref(py)).collect()
    }

    /// The receive buffer of every message (the send buffer itself for a message to self).
    #[getter]
    fn recv_buffers(&self, py: Python<'_>) -> Vec<Py<PyArray1<u8>>> {
        self.recv.iter().map(|b| b.clone_ref(py)).collect()
    }

    /// Stagger (0 or 1) of every field along every decomposed dim.
    #[getter]
    fn stagger(&self) -> Vec<Vec<usize>> {
        self.plan.stagger.clone()
    }

    /// Number of regions (field boxes) sent, over all messages.
    #[getter]
    fn nregions(&self) -> usize {
        self.plan.messages.iter().map(|m| m.send.len()).sum()
    }

    /// Packs the fields' send regions into the send buffer of message `index`, or of every
    /// message to another process when `index` is None (in one pass over the fields, rows of
    /// different messages that lie side by side read together), with the GIL released;
    /// `threads`: split a mebibyte or more over the thread pool.
    #[pyo3(signature = (index=None, threads=false))]
    fn pack(&self, py: Python<'_>, index: Option<usize>, threads: bool) -> PyResult<()> {
        let bufs = self.addresses(py, &self.send, index, "send_buffers")?;
        let plan = &self.plan;
        let bases_addr = self.bases.clone();
        py.detach(|| {
            let bases: Vec<*const u8> = bases_addr.iter().map(|&p| p as *const u8).collect();
            let mut slices: Vec<&mut [u8]> = bufs
                .iter()
                .map(|&(i, addr)| {
                    // SAFETY: `addr` is the data of the send buffer of message `i`, a uint8
                    // array of `send_bytes` elements this plan owns, one array per message.
                    unsafe {
                        std::slice::from_raw_parts_mut(addr as *mut u8, plan.messages[i].send_bytes)
                    }
                })
                .collect();
            // SAFETY: `bases` point at element zero of the fields, kept alive by
            // `_keepalive`, with the layouts the plan was built from; the buffers are not
            // part of any field.
            unsafe {
                match index {
                    Some(i) => plan.pack(i, &bases, slices[0], threads),
                    None => plan.pack_all(&bases, &mut slices, threads),
                }
            }
        });
        Ok(())
    }

    /// Copies the regions of message `index`, addressed to this process itself (periodic wrap
    /// onto one process), straight from the interior into the halo, with the GIL released.
    fn copy_local(&self, py: Python<'_>, index: usize) -> PyResult<()> {
        let which = self.which(Some(index))?;
        if self.plan.messages[which[0]].peer != self.plan.rank {
            return Err(to_py(py, Error::copy_local_index(index)));
        }
        let plan = &self.plan;
        let bases_addr = self.bases.clone();
        py.detach(|| {
            let bases: Vec<*mut u8> = bases_addr.iter().map(|&p| p as *mut u8).collect();
            // SAFETY: the fields are alive (`_keepalive`), writable, disjoint and laid out as
            // the plan was built from; the message is addressed to this process.
            unsafe { plan.copy_local(index, &bases) };
        });
        Ok(())
    }

    /// Unpacks the receive buffer of message `index`, or of every message from another
    /// process when `index` is None (in one pass over the fields), into the fields' halos, with
    /// the GIL released (`threads` as in `pack`).
    #[pyo3(signature = (index=None, threads=false))]
    fn unpack(&self, py: Python<'_>, index: Option<usize>, threads: bool) -> PyResult<()> {
        let bufs = self.addresses(py, &self.recv, index, "recv_buffers")?;
        let plan = &self.plan;
        let bases_addr = self.bases.clone();
        py.detach(|| {
            let bases: Vec<*mut u8> = bases_addr.iter().map(|&p| p as *mut u8).collect();
            let slices: Vec<&[u8]> = bufs
                .iter()
                .map(|&(i, addr)| {
                    // SAFETY: `addr` is the data of the receive buffer of message `i`, which
                    // holds `recv_bytes` bytes (for a message to self the send buffer, the same
                    // size) and is not part of any field.
                    unsafe {
                        std::slice::from_raw_parts(addr as *const u8, plan.messages[i].recv_bytes)
                    }
                })
                .collect();
            // SAFETY: as in `pack`, with the fields checked to be writable and disjoint.
            unsafe {
                match index {
                    Some(i) => plan.unpack(i, &bases, slices[0], threads),
                    None => plan.unpack_all(&bases, &slices, threads),
                }
            }
        });
        Ok(())
    }
}

impl PyHaloExchangePlan {
    /// `(message, data address)` of the buffer of message `index`, or of every message, each
    /// checked to still be the contiguous bytes the message needs: the buffers are NumPy arrays
    /// Python code can resize or reshape in place.
    fn addresses(
        &self,
        py: Python<'_>,
        buffers: &[Py<PyArray1<u8>>],
        index: Option<usize>,
        which: &str,
    ) -> PyResult<Vec<(usize, usize)>> {
        self.which(index)?
            .into_iter()
            .map(|i| {
                let typed = buffers[i].bind(py);
                let a = typed.as_untyped();
                let nbytes = a.shape().iter().product::<usize>() * a.dtype().itemsize();
                let m = &self.plan.messages[i];
                let need = if which == "send_buffers" {
                    m.send_bytes
                } else {
                    m.recv_bytes
                };
                if nbytes < need || !a.is_c_contiguous() {
                    return Err(to_py(
                        py,
                        Error::exchange_buffer_size(which, i, nbytes, need),
                    ));
                }
                Ok((i, typed.data() as usize))
            })
            .collect()
    }

    fn which(&self, index: Option<usize>) -> PyResult<Vec<usize>> {
        let n = self.plan.messages.len();
        match index {
            None => Ok((0..n).collect()),
            Some(i) if i < n => Ok(vec![i]),
            Some(i) => Err(Python::attach(|py| to_py(py, Error::message_index(i, n)))),
        }
    }
}

/// The block decomposition arithmetic of the core, for `gridbuf.distributed`.
#[pyclass(name = "BlockDecomposition", module = "gridbuf._gridbuf", frozen)]
pub struct PyBlockDecomposition {
    inner: Decomposition,
}

#[pymethods]
impl PyBlockDecomposition {
    /// Splits `global_shape[d]` points over `procs[d]` processes along every decomposed dim.
    #[new]
    fn new(
        py: Python<'_>,
        names: Vec<String>,
        global_shape: Vec<usize>,
        procs: Vec<usize>,
        periodic: Vec<bool>,
    ) -> PyResult<Self> {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let inner = Decomposition::new(&names, &global_shape, &procs, &periodic).py(py)?;
        Ok(PyBlockDecomposition { inner })
    }

    /// Number of processes.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// Global `(start, stop)` of the block at process coordinate `coord` along dim `dim`.
    fn block(&self, py: Python<'_>, dim: usize, coord: usize) -> PyResult<(usize, usize)> {
        self.check_dim(py, dim)?;
        if coord >= self.inner.procs()[dim] {
            let err =
                Error::process_coord(coord, &self.inner.names()[dim], self.inner.procs()[dim]);
            return Err(to_py(py, err));
        }
        Ok(self.inner.block(dim, coord))
    }

    /// The process coordinate whose block holds global index `index` along `dim`.
    fn owner(&self, py: Python<'_>, dim: usize, index: usize) -> PyResult<usize> {
        self.check_dim(py, dim)?;
        self.inner.owner(dim, index).py(py)
    }

    /// Process-grid coordinates of `rank`.
    fn coords(&self, py: Python<'_>, rank: usize) -> PyResult<Vec<usize>> {
        self.inner.coords(rank).py(py)
    }

    /// Rank at `coords` after shifting by `offset` (wrapping periodic dims); None past an edge.
    fn shift(&self, coords: Vec<usize>, offset: Vec<i8>) -> Option<usize> {
        if coords.len() != self.inner.ndim() || offset.len() != self.inner.ndim() {
            return None;
        }
        if coords.iter().zip(self.inner.procs()).any(|(&c, &p)| c >= p) {
            return None;
        }
        self.inner
            .shift(&coords, &offset)
            .map(|c| self.inner.rank_of(&c))
    }

    /// `(offset, rank)` of every neighbour of `rank`, diagonals included when `corners`.
    fn neighbours(
        &self,
        py: Python<'_>,
        rank: usize,
        corners: bool,
    ) -> PyResult<Vec<(Vec<i8>, usize)>> {
        Ok(self
            .inner
            .neighbours(rank, corners)
            .py(py)?
            .into_iter()
            .map(|n| (n.offset, n.rank))
            .collect())
    }
}

impl PyBlockDecomposition {
    fn check_dim(&self, py: Python<'_>, dim: usize) -> PyResult<()> {
        if dim >= self.inner.ndim() {
            return Err(to_py(py, Error::decomposition_dim(dim, self.inner.ndim())));
        }
        Ok(())
    }
}
