//! Parsers for the array interface, the CUDA array interface and DLPack (filled in by the array-interfaces work).
