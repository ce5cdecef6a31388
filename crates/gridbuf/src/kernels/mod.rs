//! Native stencil kernels (filled in by the stencil-calls work).
