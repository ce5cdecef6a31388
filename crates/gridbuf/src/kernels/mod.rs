//! Native stencil kernels: copy, laplacian, horizontal diffusion and a tridiagonal solver, plus
//! `noop`, which does nothing and exists to time a binder on its own.
//!
//! Every kernel implements one object-safe trait, [`Kernel`], so a binder can look a kernel up by
//! name ([`by_name`]), read its signature ([`Kernel::fields`]) and call it with strided views of
//! arrays of any layout. Rust programs can use the same trait or the typed functions
//! ([`copy`], [`laplacian`], [`hdiff`], [`tridiag`]) that take the domain from the output shape.
//!
//! # Arguments
//! - Every field has dims `"IJK"` ([`DIMS`]); each view is indexed `[i, j, k]` whatever its
//!   memory layout (strides may be padded, non-contiguous or negative).
//! - `inputs` are the fields with intent [`Intent::In`], `outputs` those with [`Intent::Out`] or
//!   [`Intent::InOut`], each in declaration order.
//! - Each view covers the domain widened by the field's [`Extent`]: along axis `a` its length is
//!   `extent.lower[a] + domain[a] + extent.upper[a]`, and index `extent.lower[a]` is the first
//!   point of the domain. Outputs of the built-in kernels have zero extent, so their views are
//!   exactly the domain. Shapes are checked on entry: a mismatch is an [`Error`] naming the
//!   field and the axis, so no kernel indexes outside its views.
//! - Element types are `f64` ([`Kernel::run`]) and `f32` ([`Kernel::run_f32`]); generic code calls
//!   [`run`] with any [`Float`].
//!
//! # Performance
//! At each call the loops are ordered from the output's strides: the innermost loop runs along
//! its unit-stride axis (K for C order and GT4Py's `gt:cpu_kfirst`, I for `gt:cpu_ifirst`, J for
//! `dace:cpu`) over contiguous slices that the compiler vectorises; rows with another stride are
//! gathered into a per-task buffer first, and planes that are contiguous in every field are
//! processed as one long row. The hot loops are compiled twice, for the build target and for
//! AVX2, chosen at run time ([`simd_level`]). Work is spread over [`Threads`] with a cached team
//! per thread count ([`crate::runtime::team`]); domains under [`PARALLEL_MIN_POINTS`] run on the calling thread.
//! Large copies write with streaming stores ([`STREAM_MIN_BYTES`]). Every output point is
//! computed by the same sequence of floating-point operations whatever the layout, the tiling,
//! the instruction set or the number of threads, so results are bitwise reproducible across
//! all of them.
//!
//! # Example
//! ```
//! use gridbuf::kernels::{self, Threads};
//! use ndarray::{Array3, ShapeBuilder};
//! // A Fortran-ordered input with one point of halo in I and J, a C-ordered output.
//! let inp = Array3::from_shape_fn((10, 10, 4).f(), |(i, j, _)| (i * i + j) as f64);
//! let mut out = Array3::zeros((8, 8, 4));
//! kernels::laplacian(inp.view(), out.view_mut(), Threads::ONE)?;
//! assert_eq!(out[[0, 0, 0]], 2.0); // d2/di2 of i^2
//! let k = kernels::by_name("laplacian").unwrap();
//! assert_eq!(k.fields()[0].extent.lower, [1, 1, 0]);
//! # Ok::<(), gridbuf::Error>(())
//! ```

mod copy;
pub(crate) mod exec;
mod hdiff;
mod laplacian;
mod noop;
mod tridiag;

pub use copy::CopyKernel;
pub use exec::{Threads, MAX_THREADS, PARALLEL_MIN_POINTS, STREAM_MIN_BYTES};
pub use hdiff::HdiffKernel;
pub use laplacian::LaplacianKernel;
pub use noop::NoopKernel;
pub use tridiag::TridiagKernel;

use crate::error::{Error, Result};
use ndarray::{ArrayView3, ArrayViewMut3};
use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The dims of every field of the built-in kernels, in index order.
pub const DIMS: &str = "IJK";

/// Names of the axes, indexed like the `[usize; 3]` arrays of this module.
pub const AXIS_NAMES: [&str; 3] = ["I", "J", "K"];

/// How a kernel uses a field.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Intent {
    /// Read only: passed in `inputs`.
    In,
    /// Written only, every point of the domain: passed in `outputs`.
    Out,
    /// Read and written: passed in `outputs`.
    InOut,
}

impl Intent {
    /// Whether the field is passed in `outputs` (written by the kernel).
    pub fn is_output(self) -> bool {
        !matches!(self, Intent::In)
    }

    /// Lower-case name: `"in"`, `"out"` or `"inout"`.
    pub fn name(self) -> &'static str {
        match self {
            Intent::In => "in",
            Intent::Out => "out",
            Intent::InOut => "inout",
        }
    }
}

/// How far a kernel reads around the domain, per axis I, J, K.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Extent {
    /// Points read before the first point of the domain, per axis.
    pub lower: [usize; 3],
    /// Points read after the last point of the domain, per axis.
    pub upper: [usize; 3],
}

impl Extent {
    /// No halo: the field is accessed on the domain only.
    pub const ZERO: Extent = Extent {
        lower: [0; 3],
        upper: [0; 3],
    };

    /// An extent from its lower and upper halo per axis.
    pub const fn new(lower: [usize; 3], upper: [usize; 3]) -> Extent {
        Extent { lower, upper }
    }

    /// The same halo below and above, per axis.
    pub const fn symmetric(halo: [usize; 3]) -> Extent {
        Extent {
            lower: halo,
            upper: halo,
        }
    }

    /// The shape of a view covering `domain` widened by this extent, or an overflow error.
    pub fn widen(&self, domain: [usize; 3], field: &str) -> Result<[usize; 3]> {
        let mut shape = [0; 3];
        for (a, s) in shape.iter_mut().enumerate() {
            *s = domain[a]
                .checked_add(self.lower[a])
                .and_then(|v| v.checked_add(self.upper[a]))
                .ok_or_else(|| {
                    Error::overflow(
                        format!("domain along {} for field {field:?}", AXIS_NAMES[a]),
                        domain[a],
                        "the domain plus the extent",
                    )
                })?;
        }
        Ok(shape)
    }
}

/// One field of a kernel's signature.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    /// Argument name, unique within the kernel.
    pub name: &'static str,
    /// Whether the kernel reads, writes or updates the field.
    pub intent: Intent,
    /// Halo the kernel reads around the domain.
    pub extent: Extent,
}

impl FieldSpec {
    /// A field read on the domain widened by `extent`.
    pub const fn input(name: &'static str, extent: Extent) -> FieldSpec {
        FieldSpec {
            name,
            intent: Intent::In,
            extent,
        }
    }

    /// A field written on exactly the domain.
    pub const fn output(name: &'static str) -> FieldSpec {
        FieldSpec {
            name,
            intent: Intent::Out,
            extent: Extent::ZERO,
        }
    }
}

/// The element types kernels run on: `f64` and `f32`.
pub trait Float:
    exec::Element
    + Copy
    + Default
    + Debug
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// 4.
    const FOUR: Self;
    /// NumPy's name of the type: `"float64"` or `"float32"`.
    const DTYPE: &'static str;

    /// Runs `kernel` on views of this type ([`Kernel::run`] or [`Kernel::run_f32`]).
    fn run_kernel(
        kernel: &dyn Kernel,
        inputs: &[ArrayView3<'_, Self>],
        outputs: &mut [ArrayViewMut3<'_, Self>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()>;
}

impl Float for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const FOUR: Self = 4.0;
    const DTYPE: &'static str = "float64";

    fn run_kernel(
        kernel: &dyn Kernel,
        inputs: &[ArrayView3<'_, f64>],
        outputs: &mut [ArrayViewMut3<'_, f64>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()> {
        kernel.run(inputs, outputs, domain, threads)
    }
}

impl Float for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const FOUR: Self = 4.0;
    const DTYPE: &'static str = "float32";

    fn run_kernel(
        kernel: &dyn Kernel,
        inputs: &[ArrayView3<'_, f32>],
        outputs: &mut [ArrayViewMut3<'_, f32>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()> {
        kernel.run_f32(inputs, outputs, domain, threads)
    }
}

/// A native stencil kernel.
///
/// See the [module documentation](self) for how arguments are passed. Implementations check
/// the number and shapes of the views before touching any element and leave inputs unchanged.
pub trait Kernel: Sync + Send {
    /// The registry name, e.g. `"hdiff"`.
    fn name(&self) -> &'static str;

    /// The signature: every field in argument order.
    fn fields(&self) -> &'static [FieldSpec];

    /// Runs the kernel on `f64` fields over `domain` (lengths along I, J, K).
    fn run(
        &self,
        inputs: &[ArrayView3<'_, f64>],
        outputs: &mut [ArrayViewMut3<'_, f64>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()>;

    /// Runs the kernel on `f32` fields over `domain`.
    fn run_f32(
        &self,
        inputs: &[ArrayView3<'_, f32>],
        outputs: &mut [ArrayViewMut3<'_, f32>],
        domain: [usize; 3],
        threads: Threads,
    ) -> Result<()>;

    /// The field called `name`, if the kernel has one.
    fn field(&self, name: &str) -> Option<&'static FieldSpec> {
        self.fields().iter().find(|f| f.name == name)
    }
}

/// The instruction set the kernels' inner loops use on this CPU: `"avx2"` (chosen at run time
/// when the CPU has it) or `"portable"` (what the build targets, SSE2 on x86-64).
pub fn simd_level() -> &'static str {
    exec::simd_level()
}

/// Allows (the default) or forbids the AVX2 code paths, process-wide. Results are bitwise
/// identical either way; this exists to test and time the portable paths.
pub fn set_simd_enabled(enabled: bool) {
    exec::set_simd(enabled)
}

/// Runs `kernel` on views of any [`Float`] type.
pub fn run<T: Float>(
    kernel: &dyn Kernel,
    inputs: &[ArrayView3<'_, T>],
    outputs: &mut [ArrayViewMut3<'_, T>],
    domain: [usize; 3],
    threads: Threads,
) -> Result<()> {
    T::run_kernel(kernel, inputs, outputs, domain, threads)
}

static ALL: [&dyn Kernel; 5] = [
    &CopyKernel,
    &LaplacianKernel,
    &HdiffKernel,
    &TridiagKernel,
    &NoopKernel,
];

/// Every built-in kernel, in a fixed order.
pub fn all() -> &'static [&'static dyn Kernel] {
    &ALL
}

/// The built-in kernel called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Kernel> {
    ALL.iter().copied().find(|k| k.name() == name)
}

/// Checks the number of views and every view's shape against `domain` and the signature.
///
/// Kernels call this on entry; it is public so that a binder can check arguments before it
/// releases locks or starts work.
pub fn check_args<T>(
    kernel: &str,
    specs: &[FieldSpec],
    inputs: &[ArrayView3<'_, T>],
    outputs: &[ArrayViewMut3<'_, T>],
    domain: [usize; 3],
) -> Result<()> {
    let n_in = specs.iter().filter(|s| !s.intent.is_output()).count();
    let n_out = specs.len() - n_in;
    let names = |out: bool| -> String {
        let v: Vec<&str> = specs
            .iter()
            .filter(|s| s.intent.is_output() == out)
            .map(|s| s.name)
            .collect();
        v.join(", ")
    };
    if inputs.len() != n_in {
        return Err(Error::invalid(
            format!("number of inputs of kernel {kernel:?}"),
            inputs.len(),
            format!("expected {n_in} views ({})", names(false)),
        ));
    }
    if outputs.len() != n_out {
        return Err(Error::invalid(
            format!("number of outputs of kernel {kernel:?}"),
            outputs.len(),
            format!("expected {n_out} views ({})", names(true)),
        ));
    }
    let shapes = inputs
        .iter()
        .map(|v| v.dim())
        .chain(outputs.iter().map(|v| v.dim()));
    let specs_in = specs.iter().filter(|s| !s.intent.is_output());
    let specs_out = specs.iter().filter(|s| s.intent.is_output());
    for (spec, shape) in specs_in.chain(specs_out).zip(shapes) {
        let want = spec.extent.widen(domain, spec.name)?;
        let got = [shape.0, shape.1, shape.2];
        for a in 0..3 {
            if got[a] != want[a] {
                let e = &spec.extent;
                return Err(Error::invalid(
                    format!(
                        "length along axis {} of field {:?} of kernel {kernel:?}",
                        AXIS_NAMES[a], spec.name
                    ),
                    got[a],
                    format!(
                        "expected {} (domain {} plus extent {} below and {} above)",
                        want[a], domain[a], e.lower[a], e.upper[a]
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Copies `inp` into `out` (same shape) on `threads` threads.
pub fn copy<T: Float>(
    inp: ArrayView3<'_, T>,
    out: ArrayViewMut3<'_, T>,
    threads: Threads,
) -> Result<()> {
    let domain = dim3(&out);
    run(&CopyKernel, &[inp], &mut [out], domain, threads)
}

/// Writes the 5-point horizontal laplacian of `inp` into `out`.
///
/// `out` is the domain; `inp` is it widened by one point in I and J on both sides.
pub fn laplacian<T: Float>(
    inp: ArrayView3<'_, T>,
    out: ArrayViewMut3<'_, T>,
    threads: Threads,
) -> Result<()> {
    let domain = dim3(&out);
    run(&LaplacianKernel, &[inp], &mut [out], domain, threads)
}

/// Writes COSMO's horizontal diffusion with flux limiter of `inp` into `out`.
///
/// `out` and `coeff` are the domain; `inp` is it widened by two points in I and J on both sides.
pub fn hdiff<T: Float>(
    inp: ArrayView3<'_, T>,
    coeff: ArrayView3<'_, T>,
    out: ArrayViewMut3<'_, T>,
    threads: Threads,
) -> Result<()> {
    let domain = dim3(&out);
    run(&HdiffKernel, &[inp, coeff], &mut [out], domain, threads)
}

/// Solves `a x[k-1] + b x[k] + c x[k+1] = d` along K in every column (Thomas algorithm).
///
/// All views have the shape of the domain; `a` at the first level and `c` at the last are not read.
pub fn tridiag<T: Float>(
    a: ArrayView3<'_, T>,
    b: ArrayView3<'_, T>,
    c: ArrayView3<'_, T>,
    d: ArrayView3<'_, T>,
    x: ArrayViewMut3<'_, T>,
    threads: Threads,
) -> Result<()> {
    let domain = dim3(&x);
    run(&TridiagKernel, &[a, b, c, d], &mut [x], domain, threads)
}

fn dim3<T>(v: &ArrayViewMut3<'_, T>) -> [usize; 3] {
    let (i, j, k) = v.dim();
    [i, j, k]
}

/// Implements [`Kernel`] for a unit struct with a generic `exec` method.
macro_rules! impl_kernel {
    ($ty:ty, $name:expr, $fields:expr) => {
        impl $crate::kernels::Kernel for $ty {
            fn name(&self) -> &'static str {
                $name
            }

            fn fields(&self) -> &'static [$crate::kernels::FieldSpec] {
                &$fields
            }

            fn run(
                &self,
                inputs: &[ndarray::ArrayView3<'_, f64>],
                outputs: &mut [ndarray::ArrayViewMut3<'_, f64>],
                domain: [usize; 3],
                threads: $crate::kernels::Threads,
            ) -> $crate::error::Result<()> {
                $crate::kernels::check_args($name, &$fields, inputs, outputs, domain)?;
                self.exec(inputs, outputs, domain, threads)
            }

            fn run_f32(
                &self,
                inputs: &[ndarray::ArrayView3<'_, f32>],
                outputs: &mut [ndarray::ArrayViewMut3<'_, f32>],
                domain: [usize; 3],
                threads: $crate::kernels::Threads,
            ) -> $crate::error::Result<()> {
                $crate::kernels::check_args($name, &$fields, inputs, outputs, domain)?;
                self.exec(inputs, outputs, domain, threads)
            }
        }
    };
}
pub(crate) use impl_kernel;

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array3;

    #[test]
    fn registry_has_every_kernel_once() {
        let names: Vec<&str> = all().iter().map(|k| k.name()).collect();
        assert_eq!(names, ["copy", "laplacian", "hdiff", "tridiag", "noop"]);
        for k in all() {
            assert_eq!(by_name(k.name()).unwrap().name(), k.name());
            assert_eq!(
                k.fields().iter().filter(|f| f.intent.is_output()).count(),
                1
            );
        }
        assert!(by_name("nope").is_none());
        let hd = by_name("hdiff").unwrap();
        assert_eq!(
            hd.field("inp").unwrap().extent,
            Extent::new([2, 2, 0], [2, 2, 0])
        );
        assert_eq!(hd.field("coeff").unwrap().extent, Extent::ZERO);
    }

    #[test]
    fn shape_errors_name_field_and_axis() {
        let inp = Array3::<f64>::zeros((6, 7, 3));
        let mut out = Array3::<f64>::zeros((4, 4, 3));
        let err = LaplacianKernel
            .run(
                &[inp.view()],
                &mut [out.view_mut()],
                [4, 4, 3],
                Threads::ONE,
            )
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("axis J") && msg.contains("\"inp\""), "{msg}");
        let err = LaplacianKernel
            .run(&[], &mut [out.view_mut()], [4, 4, 3], Threads::ONE)
            .unwrap_err();
        assert!(err.to_string().contains("number of inputs"), "{err}");
        let inp = Array3::<f64>::zeros((6, 6, 3));
        let err = LaplacianKernel
            .run(
                &[inp.view()],
                &mut [out.view_mut()],
                [4, 4, 2],
                Threads::ONE,
            )
            .unwrap_err();
        assert!(err.to_string().contains("axis K"), "{err}");
        let err = LaplacianKernel
            .run(
                &[inp.view()],
                &mut [out.view_mut()],
                [usize::MAX, 4, 3],
                Threads::ONE,
            )
            .unwrap_err();
        assert!(matches!(err, Error::Overflow { .. }), "{err}");
    }
}
