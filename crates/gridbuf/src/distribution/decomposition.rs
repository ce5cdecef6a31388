//! Block decomposition of a global index space over a Cartesian grid of processes.
//!
//! The arithmetic of distributed fields, with no MPI in it: block sizes for splits that do not
//! divide evenly, process coordinates (row-major, the order of an MPI Cartesian communicator),
//! and the neighbour table with periodic wrap, diagonals included on request.

use crate::error::{Error, Result};

/// A global index space split into blocks over a grid of processes.
///
/// Along decomposed dim `d`, the `global[d]` points are split into `procs[d]` contiguous blocks
/// whose sizes differ by at most one: the first `global[d] % procs[d]` blocks get one extra point.
/// Ranks number the process grid in row-major order (the last dim varies fastest), as in an MPI
/// Cartesian communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decomposition {
    names: Vec<String>,
    global: Vec<usize>,
    procs: Vec<usize>,
    periodic: Vec<bool>,
    size: usize,
}

/// A neighbour of a process: the direction it lies in and its rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbour {
    /// Offset of the neighbour's coordinates from this process's, -1, 0 or 1 per decomposed dim.
    pub offset: Vec<i8>,
    /// Rank of the neighbour (possibly this process itself, on a periodic dim of one process).
    pub rank: usize,
}

impl Decomposition {
    /// Splits `global[d]` points over `procs[d]` processes along every decomposed dim `d`.
    ///
    /// `names` label the dims in messages (such as `"I"`, `"J"`). Every process needs at least
    /// one point, so `procs[d]` may not exceed `global[d]`.
    pub fn new(
        names: &[&str],
        global: &[usize],
        procs: &[usize],
        periodic: &[bool],
    ) -> Result<Decomposition> {
        let n = names.len();
        if n == 0 {
            return Err(Error::invalid(
                "split",
                names,
                "at least one dim must be decomposed",
            ));
        }
        for (param, len) in [
            ("global shape", global.len()),
            ("procs", procs.len()),
            ("periodic", periodic.len()),
        ] {
            if len != n {
                return Err(Error::invalid(
                    param,
                    len,
                    format!("expected one entry per decomposed dim ({n}: {names:?})"),
                ));
            }
        }
        let mut size = 1usize;
        for d in 0..n {
            if procs[d] == 0 || procs[d] > global[d] {
                return Err(Error::invalid(
                    "procs",
                    procs,
                    format!(
                        "along {} the {} points need between 1 and {} processes (every process \
                         owns at least one point)",
                        names[d], global[d], global[d]
                    ),
                ));
            }
            size = size
                .checked_mul(procs[d])
                .ok_or_else(|| Error::overflow("procs", procs, "the number of processes"))?;
        }
        Ok(Decomposition {
            names: names.iter().map(|s| s.to_string()).collect(),
            global: global.to_vec(),
            procs: procs.to_vec(),
            periodic: periodic.to_vec(),
            size,
        })
    }

    /// Number of decomposed dims.
    pub fn ndim(&self) -> usize {
        self.global.len()
    }

    /// Names of the decomposed dims.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Global number of points per decomposed dim.
    pub fn global(&self) -> &[usize] {
        &self.global
    }

    /// Number of processes per decomposed dim.
    pub fn procs(&self) -> &[usize] {
        &self.procs
    }

    /// Whether each decomposed dim wraps around.
    pub fn periodic(&self) -> &[bool] {
        &self.periodic
    }

    /// Number of processes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Global `(start, stop)` of the block at process coordinate `coord` along dim `dim`.
    ///
    /// # Panics
    /// If `dim` or `coord` is out of range.
    pub fn block(&self, dim: usize, coord: usize) -> (usize, usize) {
        let (g, p) = (self.global[dim], self.procs[dim]);
        assert!(coord < p, "process coordinate {coord} out of range 0..{p}");
        let (base, extra) = (g / p, g % p);
        let start = coord * base + coord.min(extra);
        (start, start + base + usize::from(coord < extra))
    }

    /// Number of points in the block at `coord` along `dim`.
    pub fn block_len(&self, dim: usize, coord: usize) -> usize {
        let (start, stop) = self.block(dim, coord);
        stop - start
    }

    /// The process coordinate whose block holds global index `index` along `dim`.
    pub fn owner(&self, dim: usize, index: usize) -> Result<usize> {
        let (g, p) = (self.global[dim], self.procs[dim]);
        if index >= g {
            return Err(Error::invalid(
                "index",
                index,
                format!("along {} the global indices are 0..{g}", self.names[dim]),
            ));
        }
        let (base, extra) = (g / p, g % p);
        let big = extra * (base + 1);
        Ok(if index < big {
            index / (base + 1)
        } else {
            extra + (index - big) / base
        })
    }

    /// Coordinates of `rank` in the process grid (row-major).
    pub fn coords(&self, rank: usize) -> Result<Vec<usize>> {
        if rank >= self.size {
            return Err(Error::invalid(
                "rank",
                rank,
                format!("ranks are 0..{}", self.size),
            ));
        }
        let mut coords = vec![0; self.ndim()];
        let mut r = rank;
        for d in (0..self.ndim()).rev() {
            coords[d] = r % self.procs[d];
            r /= self.procs[d];
        }
        Ok(coords)
    }

    /// Rank of the process at `coords` (row-major); `coords` must be in range.
    pub fn rank_of(&self, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(&self.procs)
            .fold(0, |rank, (&c, &p)| rank * p + c)
    }

    /// Coordinates of the process at `offset` from `coords`, wrapping around periodic dims;
    /// `None` past a non-periodic edge.
    pub fn shift(&self, coords: &[usize], offset: &[i8]) -> Option<Vec<usize>> {
        let mut out = Vec::with_capacity(coords.len());
        for d in 0..self.ndim() {
            let p = self.procs[d] as i64;
            let c = coords[d] as i64 + i64::from(offset[d]);
            if (0..p).contains(&c) {
                out.push(c as usize);
            } else if self.periodic[d] {
                out.push(c.rem_euclid(p) as usize);
            } else {
                return None;
            }
        }
        Some(out)
    }

    /// Every neighbour of `rank`: offsets in {-1, 0, 1} per dim (not all zero), in lexicographic
    /// order of the offsets. With `corners` false only the face neighbours (one non-zero offset)
    /// are listed. Neighbours past a non-periodic edge are left out; on a periodic dim of one or
    /// two processes several offsets name the same rank (or `rank` itself).
    pub fn neighbours(&self, rank: usize, corners: bool) -> Result<Vec<Neighbour>> {
        let coords = self.coords(rank)?;
        let n = self.ndim();
        let mut out = Vec::new();
        let total = 3usize.pow(n as u32);
        for code in 0..total {
            let mut offset = vec![0i8; n];
            let mut c = code;
            for d in (0..n).rev() {
                offset[d] = (c % 3) as i8 - 1;
                c /= 3;
            }
            let nonzero = offset.iter().filter(|&&o| o != 0).count();
            if nonzero == 0 || (!corners && nonzero > 1) {
                continue;
            }
            if let Some(nc) = self.shift(&coords, &offset) {
                out.push(Neighbour {
                    offset,
                    rank: self.rank_of(&nc),
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_blocks_cover_the_range() {
        let d = Decomposition::new(&["I"], &[10], &[3], &[false]).unwrap();
        assert_eq!(
            (0..3).map(|c| d.block(0, c)).collect::<Vec<_>>(),
            [(0, 4), (4, 7), (7, 10)]
        );
        for g in 0..10 {
            let c = d.owner(0, g).unwrap();
            let (s, e) = d.block(0, c);
            assert!(s <= g && g < e);
        }
        assert!(d.owner(0, 10).is_err());
    }

    #[test]
    fn neighbours_wrap_and_stop() {
        let d = Decomposition::new(&["I", "J"], &[8, 8], &[2, 3], &[true, false]).unwrap();
        assert_eq!(d.coords(5).unwrap(), [1, 2]);
        assert_eq!(d.rank_of(&[1, 2]), 5);
        let nb = d.neighbours(0, true).unwrap();
        // J has no neighbour below coordinate 0; I wraps (two processes: left == right).
        assert_eq!(nb.len(), 5);
        assert!(nb.iter().all(|n| n.offset[1] >= 0));
        assert_eq!(d.neighbours(0, false).unwrap().len(), 3);
        assert!(Decomposition::new(&["I"], &[2], &[3], &[false]).is_err());
        assert!(Decomposition::new(&["I"], &[2], &[2, 1], &[false]).is_err());
    }
}
