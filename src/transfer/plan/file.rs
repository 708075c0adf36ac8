//! Machine-model files: a transfer graph written down once per machine (measured curves, the
//! space threshold) and loaded at start-up, so that planning needs no measurements of its own.
//!
//! The format is TOML:
//!
//! ```toml
//! threshold = 33554432        # TH: largest intermediate buffer, bytes
//! mpi = "openmpi"             # optional: the MPI whose paths the MPI channels measured
//! request_cost = 2.5e-6       # optional: seconds one runtime request costs besides its bytes
//!
//! [[memory]]
//! name = "FBM0"               # unique; channels refer to memories by name
//! kind = "fbm"                # sys | reg | zcm | fbm | dsk | peer | remote
//! node = 0
//!
//! [[channel]]
//! kind = "gpu_read"           # memcpy | shm | network | mpi_typed | shm_typed | disk_read
//!                             # | disk_write | gpu_read | gpu_write | gpu_copy | remote_memcpy
//! src = "FBM0"
//! dst = "ZCM0"                # src = dst: a self-loop (layout conversion in place)
//! curve = [[1024, 0.5e9], [32768, 3.0e9], [1048576, 6.418e9]]   # [request bytes, bytes/s]
//! ```
//!
//! Curves are interpolated linearly in log2 of the request size and are constant beyond their
//! first and last points (`curve.rs`). Unknown keys are errors, so a misspelt key does not
//! silently fall back to a default. Example models live next to this file in `models/`.

use std::path::Path;

use serde::Deserialize;

use super::curve::{Curve, CurveError};
use super::model::{Channel, ChannelKind, Memory, MemoryId, MemoryKind, Model, ModelError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    threshold: u64,
    /// The MPI whose paths the `network`, `mpi_typed` and `shm_typed` channels measured.
    #[serde(default)]
    mpi: Option<String>,
    /// What one request of the transfer runtime costs besides its bytes (seconds).
    #[serde(default)]
    request_cost: Option<f64>,
    #[serde(default)]
    memory: Vec<MemoryEntry>,
    #[serde(default)]
    channel: Vec<ChannelEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryEntry {
    name: String,
    kind: MemoryKind,
    node: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelEntry {
    kind: ChannelKind,
    src: String,
    dst: String,
    /// Pairs, checked by hand: a tuple would silently drop a third number.
    curve: Vec<Vec<f64>>,
}

impl Model {
    /// A model from the text of a model file.
    pub fn from_toml_str(text: &str) -> Result<Model, ModelError> {
        let file: File = toml::from_str(text).map_err(|e| ModelError::Syntax(e.to_string()))?;
        let memories: Vec<Memory> = file.memory.into_iter().map(|m| Memory { name: m.name, kind: m.kind, node: m.node }).collect();
        let id = |channel: usize, name: &str| {
            memories
                .iter()
                .position(|m| m.name == name)
                .map(|i| MemoryId(i as u32))
                .ok_or_else(|| ModelError::UnknownMemory { channel, name: name.to_string() })
        };
        let mut channels = Vec::with_capacity(file.channel.len());
        for (i, c) in file.channel.iter().enumerate() {
            let points = c
                .curve
                .iter()
                .enumerate()
                .map(|(j, p)| match p[..] {
                    [r, t] => Ok((r, t)),
                    _ => Err(CurveError::NotAPair(j)),
                })
                .collect::<Result<Vec<_>, _>>();
            let curve = points.and_then(|p| Curve::new(&p)).map_err(|reason| ModelError::BadCurve { channel: i, reason })?;
            channels.push(Channel { kind: c.kind, src: id(i, &c.src)?, dst: id(i, &c.dst)?, curve });
        }
        Model::new(memories, channels, file.threshold)?.with_mpi(file.mpi).with_request_cost(file.request_cost)
    }

    /// A model from a model file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Model, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Io { path: path.display().to_string(), reason: e.to_string() })?;
        Model::from_toml_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAPLING: &str = include_str!("models/sapling2.toml");

    #[test]
    fn sapling2_loads() {
        let m = Model::from_toml_str(SAPLING).unwrap();
        assert_eq!(m.memories().len(), 10);
        assert_eq!(m.threshold(), 32 << 20);
        let fbm0 = m.memory_id("FBM0").unwrap();
        let zcm0 = m.memory_id("ZCM0").unwrap();
        let read = m.outgoing(fbm0).iter().map(|&c| m.channel(c)).find(|c| c.dst == zcm0).unwrap();
        assert_eq!(read.kind, ChannelKind::GpuRead);
        assert_eq!(read.curve.peak(), 6.418e9);
        assert_eq!(read.curve.at(32768.0), 3.0e9);
        for name in ["SYS0", "REG0", "ZCM0", "FBM0", "SYS1", "REG1", "ZCM1", "FBM1"] {
            let id = m.memory_id(name).unwrap();
            assert!(m.outgoing(id).iter().any(|&c| m.channel(c).dst == id), "{name} has a self-loop");
        }
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        let mem = "threshold = 64\n[[memory]]\nname = \"A\"\nkind = \"sys\"\nnode = 0\n";
        let chan = |src: &str, curve: &str| format!("{mem}[[channel]]\nkind = \"memcpy\"\nsrc = \"{src}\"\ndst = \"A\"\ncurve = {curve}\n");
        assert!(Model::from_toml_str(&chan("A", "[[16, 1e9]]")).is_ok());
        assert_eq!(
            Model::from_toml_str(&chan("B", "[[16, 1e9]]")).unwrap_err(),
            ModelError::UnknownMemory { channel: 0, name: "B".into() }
        );
        assert_eq!(Model::from_toml_str(&chan("A", "[]")).unwrap_err(), ModelError::BadCurve { channel: 0, reason: CurveError::Empty });
        assert_eq!(
            Model::from_toml_str(&chan("A", "[[16, -1e9]]")).unwrap_err(),
            ModelError::BadCurve { channel: 0, reason: CurveError::NotPositive(0) }
        );
        let missing = format!("{mem}[[channel]]\nkind = \"memcpy\"\nsrc = \"A\"\ndst = \"A\"\n");
        assert!(matches!(Model::from_toml_str(&missing), Err(ModelError::Syntax(_))));
        for text in [
            "this is not toml",
            "",
            "threshold = -1",
            "threshold = 0",
            "threshold = 8\n[[memory]]\nname = \"A\"\nkind = \"ssd\"\nnode = 0\n",
            "threshold = 8\n[[memory]]\nname = \"A\"\nkind = \"sys\"\nnode = 0\n[[memory]]\nname = \"A\"\nkind = \"reg\"\nnode = 0\n",
            &chan("A", "[[16, 1e9, 3]]"),
            &chan("A", "[[16]]"),
            &chan("A", "[[\"x\", 1e9]]"),
            &format!("{mem}spare = 1\n"),
            &format!("request_cost = -1.0\n{mem}"),
            &format!("request_cost = 2.0\n{mem}"),
            &format!("request_cost = nan\n{mem}"),
        ] {
            let err = Model::from_toml_str(text).unwrap_err();
            assert!(!err.to_string().is_empty());
        }
        assert!(matches!(Model::from_file("/nonexistent/model.toml"), Err(ModelError::Io { .. })));
        assert_eq!(Model::from_toml_str(mem).unwrap().request_cost(), None);
        assert_eq!(Model::from_toml_str(&format!("request_cost = 2.5e-6\n{mem}")).unwrap().request_cost(), Some(2.5e-6));
    }
}
