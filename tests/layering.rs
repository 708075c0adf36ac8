//! The layering rule (docs/architecture.md, "Layers"): no import cycle between sluice's
//! top-level modules (intercept -> protocol -> transfer -> datatype -> ffi, with the leaf state
//! modules below), and none between the modules of the protocol and transfer layers. A
//! module's imports are read from its source: every `crate::a::b` path and every `super::`
//! path, resolved to the longest module prefix that exists. Cycles among the files of one
//! module (a parent and its children, the datatype engine's siblings) are allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/protocol/p2p/mod.rs` -> `["protocol", "p2p"]`; `src/lib.rs` -> `[]`.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib")) {
        m.pop();
    }
    m
}

/// The identifier path following each occurrence of `prefix` in `text` (`crate::` or `super::`).
fn paths_after<'a>(text: &'a str, prefix: &'a str) -> impl Iterator<Item = Vec<String>> + 'a {
    text.match_indices(prefix).filter_map(move |(i, _)| {
        // A word boundary before the prefix (`$crate::` in macros counts as `crate::`).
        let before = text[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return None;
        }
        let rest = &text[i + prefix.len()..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        let parts: Vec<String> = rest[..end].split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
        (!parts.is_empty()).then_some(parts)
    })
}

fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Module, std::path::PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
    let resolve = |parts: &[String]| (1..=parts.len()).rev().map(|i| parts[..i].to_vec()).find(|p| modules.contains_key(p));
    let mut g: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, f) in &modules {
        let text = std::fs::read_to_string(f).unwrap();
        let is_dir_module = f.file_name().is_some_and(|n| n == "mod.rs");
        let parent: Module = if is_dir_module { m.clone() } else { m[..m.len().saturating_sub(1)].to_vec() };
        let targets = paths_after(&text, "crate::")
            .chain(paths_after(&text, "super::").map(|p| parent.iter().cloned().chain(p).collect()))
            .filter_map(|p| resolve(&p))
            .filter(|t| t != m);
        g.entry(m.clone()).or_default().extend(targets);
    }
    g
}

/// The graph with every module replaced by its ancestor `keep(m)` (`None`: dropped).
fn collapse(g: &BTreeMap<Module, BTreeSet<Module>>, keep: impl Fn(&Module) -> Option<Module>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut out: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (m, ts) in g {
        let Some(a) = keep(m) else { continue };
        let entry = out.entry(a.clone()).or_default();
        entry.extend(ts.iter().filter_map(&keep).filter(|b| *b != a));
    }
    out
}

/// One cycle of `g`, if it has any (depth-first search).
fn find_cycle(g: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        v: &Module,
        g: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, u8>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        state.insert(v.clone(), 1);
        stack.push(v.clone());
        for w in g.get(v).into_iter().flatten() {
            match state.get(w).copied().unwrap_or(0) {
                0 => {
                    if let Some(c) = visit(w, g, state, stack) {
                        return Some(c);
                    }
                }
                1 => {
                    let at = stack.iter().position(|x| x == w).unwrap();
                    return Some(stack[at..].to_vec());
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(v.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    g.keys().find_map(|v| if state.contains_key(v) { None } else { visit(v, g, &mut state, &mut Vec::new()) })
}

fn show(c: &[Module]) -> String {
    let name = |m: &Module| if m.is_empty() { "crate".to_owned() } else { m.join("::") };
    c.iter().chain(c.first()).map(name).collect::<Vec<_>>().join(" -> ")
}

#[test]
fn reads_imports_of_the_whole_crate() {
    let g = graph();
    // The reader must see the layers and their known edges, or the checks below prove nothing.
    let edge = |a: &[&str], b: &[&str]| {
        let (a, b): (Module, Module) = (a.iter().map(|s| s.to_string()).collect(), b.iter().map(|s| s.to_string()).collect());
        g.get(&a).is_some_and(|ts| ts.contains(&b))
    };
    assert!(g.len() > 100, "only {} modules found", g.len());
    assert!(edge(&["protocol", "layout"], &["protocol", "datatype"]));
    assert!(edge(&["protocol", "p2p", "pipeline", "send"], &["transfer", "shm"]));
    let with_cycle: BTreeMap<Module, BTreeSet<Module>> =
        [(vec!["a".to_owned()], BTreeSet::from([vec!["b".to_owned()]])), (vec!["b".to_owned()], BTreeSet::from([vec!["a".to_owned()]]))]
            .into();
    assert!(find_cycle(&with_cycle).is_some());
}

#[test]
fn no_cycle_between_top_level_modules() {
    let top = collapse(&graph(), |m| m.first().map(|s| vec![s.clone()]));
    if let Some(c) = find_cycle(&top) {
        panic!("import cycle between layers: {}", show(&c));
    }
}

#[test]
fn no_cycle_between_modules_of_the_protocol_and_transfer_layers() {
    for layer in ["protocol", "transfer"] {
        let g = collapse(&graph(), |m| (m.len() >= 2 && m[0] == layer).then(|| m[..2].to_vec()));
        if let Some(c) = find_cycle(&g) {
            panic!("import cycle inside the {layer} layer: {}", show(&c));
        }
    }
}
