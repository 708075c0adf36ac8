//! Hardware detection (filled in below).
