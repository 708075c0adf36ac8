//! The transfer runtime (isometry, Sections 3 and 5; Realm's transfer descriptors): a copy
//! between two places (host memory or a file, each laid out as `count` elements of a datatype)
//! becomes a path of hops over this host's channels, planned on the machine model (`path`), and
//! runs as a transfer descriptor (`descriptor`): the stream is cut into blocks that flow through
//! the hops pipelined, through bounded intermediate buffers, each channel serving its queue by
//! priority on its own worker thread (`engine`). Nothing here calls MPI: the channels so far are
//! Memcpy (`memcpy`, layout conversion by the datatype engine) and DiskRead/DiskWrite (`disk`).
//!
//! The runtime of the process is built on first use from the model `SLUICE_CALIBRATION` names
//! (or the built-in one, `host-default.toml`); its transfers share four times the model's
//! space threshold of intermediate buffers.

pub mod calibrate;
mod channel;
mod descriptor;
mod disk;
mod engine;
mod event;
mod memcpy;
mod path;
mod place;
pub mod progress;
#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock};

pub use disk::positioned;
pub use engine::{CopyError, Runtime};
pub use event::Event;
pub use path::{Path, DEFAULT_REQUEST_COST};
pub use place::{Memory, Place};

use crate::transfer::plan::Model;

/// The built-in model (documented in docs/runtime.md).
pub const DEFAULT_MODEL: &str = include_str!("host-default.toml");

/// The built-in model, parsed.
pub fn default_model() -> Model {
    Model::from_toml_str(DEFAULT_MODEL).expect("the built-in model is valid (unit-tested)")
}

/// The model file `SLUICE_CALIBRATION` (`setting`: its value, `None` for auto) names.
pub fn model_path(setting: Option<&str>) -> Option<std::path::PathBuf> {
    match setting {
        Some(p) if p != "auto" && !p.is_empty() => Some(std::path::PathBuf::from(p)),
        _ => auto_model_path(),
    }
}

/// Where `SLUICE_CALIBRATION=auto` looks for this host's model.
pub fn auto_model_path() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
    let host = crate::transfer::node::host_name();
    Some(base.join("sluice").join(format!("model-{host}.toml")))
}

/// The model to plan with and where it came from: the named file, this host's calibration file
/// when present, else the built-in model (a file that cannot be used is reported, never fatal).
pub fn load_model(setting: Option<&str>) -> (Model, String) {
    let path = match setting {
        Some(p) => Some(std::path::PathBuf::from(p)),
        None => auto_model_path().filter(|p| p.exists()),
    };
    match path {
        None => (default_model(), "built-in".into()),
        Some(p) => match Model::from_file(&p) {
            Ok(m) => (m, p.display().to_string()),
            Err(e) => {
                log::warn!("SLUICE_CALIBRATION: {e}; using the built-in machine model");
                (default_model(), "built-in (the file could not be used)".into())
            }
        },
    }
}

static GLOBAL: OnceLock<(Arc<Runtime>, String)> = OnceLock::new();

/// The process's runtime (built on first use).
pub fn global() -> &'static Arc<Runtime> {
    &GLOBAL
        .get_or_init(|| {
            let setting = crate::runtime::config().and_then(|c| c.calibration.clone());
            let (model, from) = load_model(setting.as_deref());
            let limit = (model.threshold() as usize).saturating_mul(4);
            (Runtime::new(model, limit), from)
        })
        .0
}

/// Where the process's model came from, once the runtime exists.
pub fn model_source() -> Option<&'static str> {
    GLOBAL.get().map(|g| g.1.as_str())
}
