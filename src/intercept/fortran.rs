//! Fortran entry points (filled in below).
