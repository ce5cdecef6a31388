//! ArrayInfo: what gridbuf knows about any array it is handed (filled in by the array-interfaces work).
