//! Integration tests of `switchboard link`: the real proxy on port 0 in front
//! of small servers on port 0. One target, a module per area. Wall-clock
//! tolerances appear only where the issue asks for a measured accuracy; the
//! exact model is tested on virtual time next to the code.

mod support;

mod accuracy;
mod fast_open;
mod flags;
mod integrity;
mod shared;
mod upstream;
