//! The progress bar on stderr: the current step and how far it got. Hidden with
//! `--quiet` and whenever stderr is not a terminal (indicatif's own check).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub fn new(visible: bool) -> Progress {
        let target = if visible { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        let style = ProgressStyle::with_template("{spinner} {msg:40} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Progress { bar }
    }

    /// Starts a step of `len` units, e.g. `pingpong websocket` with 100 round trips.
    pub fn step(&self, name: impl Into<String>, len: u64) {
        self.bar.set_message(name.into());
        self.bar.set_length(len);
        self.bar.set_position(0);
    }

    pub fn set(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    pub fn message(&self, msg: impl Into<String>) {
        self.bar.set_message(msg.into());
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
