//! What the compiled crate's `Cargo.toml` says, where it changes what the macros tell the user.
//!
//! The only question asked today: does the crate depend on a schemars other than 1? A type
//! deriving that version's `JsonSchema` is no tool argument, and rustc's error alone does not
//! say why (both traits are named `JsonSchema`), so the generated bound carries a note naming
//! the cause in that case.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use toml_edit::{DocumentMut, Item, Table};

/// The answers per manifest directory: every `#[tool]` of a crate asks, the manifest is read once.
static OTHER_SCHEMARS: Mutex<Option<HashMap<PathBuf, bool>>> = Mutex::new(None);

/// Whether the crate being compiled depends (directly, as a dependency or dev-dependency, under
/// any name) on a schemars whose version requirement is not 1. An unreadable manifest, or a
/// requirement without a version (a path or git dependency), counts as no.
pub(crate) fn depends_on_other_schemars() -> bool {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return false;
    };
    let mut cache = OTHER_SCHEMARS
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let answers = cache.get_or_insert_with(HashMap::new);
    if let Some(answer) = answers.get(&dir) {
        return *answer;
    }
    let answer = read(&dir.join("Cargo.toml"))
        .is_some_and(|manifest| manifest_has_other_schemars(&manifest, &dir));
    answers.insert(dir, answer);
    answer
}

fn read(path: &Path) -> Option<DocumentMut> {
    std::fs::read_to_string(path).ok()?.parse().ok()
}

/// The check on a parsed manifest; `dir` is where a workspace root is looked for when a
/// dependency says `workspace = true`.
fn manifest_has_other_schemars(manifest: &DocumentMut, dir: &Path) -> bool {
    let mut tables: Vec<&Table> = Vec::new();
    for key in ["dependencies", "dev-dependencies"] {
        tables.extend(manifest.get(key).and_then(Item::as_table));
    }
    if let Some(targets) = manifest.get("target").and_then(Item::as_table) {
        for (_, target) in targets {
            for key in ["dependencies", "dev-dependencies"] {
                tables.extend(target.get(key).and_then(Item::as_table));
            }
        }
    }
    tables.into_iter().flat_map(Table::iter).any(|(name, dep)| {
        let package = dep.get("package").and_then(Item::as_str).unwrap_or(name);
        if package != "schemars" {
            return false;
        }
        let inherited = dep.get("workspace").and_then(Item::as_bool) == Some(true);
        let requirement = if inherited {
            workspace_dependency(dir, name).and_then(|dep| version_of(&dep))
        } else {
            version_of(dep)
        };
        requirement.is_some_and(|req| !requires_major_one(&req))
    })
}

/// The version requirement of a dependency entry: `"0.8"` or `{ version = "0.8", … }`.
fn version_of(dep: &Item) -> Option<String> {
    dep.as_str()
        .or_else(|| dep.get("version").and_then(Item::as_str))
        .map(str::to_owned)
}

/// `[workspace.dependencies] name` of the nearest workspace root above `dir`.
fn workspace_dependency(dir: &Path, name: &str) -> Option<Item> {
    dir.ancestors().skip(1).find_map(|parent| {
        let manifest = read(&parent.join("Cargo.toml"))?;
        let dep = manifest.get("workspace")?.get("dependencies")?.get(name)?;
        Some(dep.clone())
    })
}

/// Whether every comparator of a requirement (`"1"`, `"^1.0.4"`, `">=1, <2"`) names major 1.
fn requires_major_one(requirement: &str) -> bool {
    requirement.split(',').all(|comparator| {
        let version = comparator
            .trim()
            .trim_start_matches(['^', '~', '=', '>', '<', ' ']);
        version.split('.').next().map(str::trim) == Some("1")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(toml: &str) -> bool {
        let manifest: DocumentMut = toml.parse().expect("test manifests parse");
        manifest_has_other_schemars(&manifest, Path::new("/nonexistent/crate"))
    }

    #[test]
    fn requirements_other_than_one_are_found_under_any_name() {
        assert!(other("[dependencies]\nschemars = \"0.8\""));
        assert!(other(
            "[dependencies]\nschemars = { version = \"^0.8.21\", features = [\"uuid1\"] }"
        ));
        assert!(other(
            "[dev-dependencies]\nold = { package = \"schemars\", version = \"0.8\" }"
        ));
        assert!(other(
            "[target.'cfg(unix)'.dependencies]\nschemars = \"=0.9.0\""
        ));
        assert!(!other("[dependencies]\nschemars = \"1\""));
        assert!(!other(
            "[dependencies]\nschemars = { version = \"^1.0.4\" }"
        ));
        assert!(!other("[dependencies]\nschemars = \">=1.0, <1.5\""));
        assert!(!other("[dependencies]\nserde = \"0.9\""));
        // Without a version (a path dependency) nothing is known.
        assert!(!other(
            "[dependencies]\nschemars = { path = \"../schemars\" }"
        ));
        assert!(!other(""));
    }

    #[test]
    fn an_inherited_requirement_is_read_from_the_workspace() {
        let root = std::env::temp_dir().join(format!("llm-tools-manifest-{}", std::process::id()));
        let member = root.join("member");
        std::fs::create_dir_all(&member).expect("a temp dir");
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\n[workspace.dependencies]\nschemars = { version = \"0.8\" }\n",
        )
        .expect("the workspace manifest is written");
        let manifest: DocumentMut = "[dependencies]\nschemars = { workspace = true }"
            .parse()
            .expect("parses");
        assert!(manifest_has_other_schemars(&manifest, &member));
        std::fs::remove_dir_all(&root).expect("the temp dir is removed");
    }
}
