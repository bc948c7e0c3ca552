//! Lists the file-level import cycles within each crate: file A names a module of file B (in a
//! `use`, in a `crate::`, `super::` or `self::` path, or in a path starting with one of its own
//! child modules, `child::f()`) and B, directly or through other files, names a module of A. A `mod` declaration is not an import: the parent declaring its child is
//! no edge, but a parent's `pub use child::X` is one, and so is the child's `use super::Y`.
//!
//! A path is resolved to the deepest module it names (`crate::chat::Chat` names `chat`, whose
//! file is `chat/mod.rs`, wherever `Chat` is defined); inline modules belong to their file.
//! Comments, doc comments, string literals, `$crate` paths, `pub(in …)` and the bodies of
//! `quote!`-like macros (code generated for another crate) are not read.
//!
//! Inline `#[cfg(test)]` modules are left out (a test module in a file of its own is a file
//! nobody imports, so it closes no cycle either); `--tests` reads them too.
//!
//! Usage: import-cycles [--list] [--tests] [crate-dir…]   (default: the four library crates)
//! Exit status: 1 when a cycle exists (0 with `--list`), 2 on a usage or read error.
//! Built and run by `scripts/import-cycles.sh`; standard library only.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const DEFAULT_CRATES: [&str; 4] = [
    "llm-tools-core",
    "llm-tools-macros",
    "llm-tools-providers",
    "llm-tools-mcp",
];

/// Macros whose bodies are code for another crate (what a proc macro emits).
const FOREIGN_CODE_MACROS: [&str; 4] = [
    "quote",
    "quote_spanned",
    "parse_quote",
    "parse_quote_spanned",
];

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
    /// A string literal's contents (for `#[path = "…"]`).
    Str(String),
    /// Any other literal or lifetime.
    Other,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

fn tokenize(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let n = chars.len();
    let at = |i: usize| -> char { if i < n { chars[i] } else { '\0' } };
    while i < n {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < n {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            let start_line = line;
            if c != '"' {
                i += 1;
            }
            i += 1;
            let mut s = String::new();
            while i < n && chars[i] != '"' {
                if chars[i] == '\\' {
                    s.push(chars[i]);
                    i += 1;
                }
                if i < n {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    s.push(chars[i]);
                }
                i += 1;
            }
            i += 1;
            out.push(Token {
                tok: Tok::Str(s),
                line: start_line,
            });
        } else if (c == 'r'
            && (at(i + 1) == '"' || (at(i + 1) == '#' && (at(i + 2) == '"' || at(i + 2) == '#'))))
            || ((c == 'b' || c == 'c')
                && at(i + 1) == 'r'
                && (at(i + 2) == '"' || at(i + 2) == '#'))
        {
            // Raw string: r"…", r#"…"#, br"…", cr#"…"#.
            let start_line = line;
            i += if c == 'r' { 1 } else { 2 };
            let mut hashes = 0;
            while at(i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            let mut s = String::new();
            while i < n {
                if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                s.push(chars[i]);
                i += 1;
            }
            out.push(Token {
                tok: Tok::Str(s),
                line: start_line,
            });
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' {
                i += 2;
                while i < n && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            out.push(Token {
                tok: Tok::Other,
                line,
            });
        } else if c.is_ascii_digit() {
            while i < n
                && (chars[i].is_alphanumeric()
                    || chars[i] == '_'
                    || (chars[i] == '.' && at(i + 1).is_ascii_digit()))
            {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Other,
                line,
            });
        } else if c.is_alphabetic() || c == '_' {
            if c == 'r' && at(i + 1) == '#' {
                i += 2; // a raw identifier: r#type
            }
            let start = i;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(chars[start..i].iter().collect()),
                line,
            });
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

fn ident(tokens: &[Token], i: usize) -> Option<&str> {
    match tokens.get(i).map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn punct(tokens: &[Token], i: usize, c: char) -> bool {
    matches!(tokens.get(i).map(|t| &t.tok), Some(Tok::Punct(p)) if *p == c)
}

fn path_sep(tokens: &[Token], i: usize) -> bool {
    matches!(tokens.get(i).map(|t| &t.tok), Some(Tok::PathSep))
}

/// The index just past the group opened at `open` (`{`, `(` or `[`).
fn skip_group(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0i32;
    let mut i = open;
    while i < tokens.len() {
        match tokens[i].tok {
            Tok::Punct('{' | '(' | '[') => depth += 1,
            Tok::Punct('}' | ')' | ']') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    tokens.len()
}

type ModPath = Vec<String>;

struct Module {
    file: usize,
    children: BTreeSet<String>,
}

struct SourceFile {
    path: PathBuf,
    tokens: Vec<Token>,
    /// The module each token is in (an inline module's tokens are in it).
    scope: Vec<ModPath>,
}

struct Crate {
    files: Vec<SourceFile>,
    modules: BTreeMap<ModPath, Module>,
    /// Inline `#[cfg(test)] mod … { }` blocks: test code, read only with `--tests`.
    test_modules: BTreeSet<ModPath>,
}

/// The directory where the file-backed children of `module` (declared in `file`, at `inline`
/// inline modules deep) live.
fn child_dir(file: &Path, inline: &[String]) -> PathBuf {
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut dir = if matches!(stem, "lib" | "main" | "mod") {
        dir
    } else {
        dir.join(stem)
    };
    for name in inline {
        dir = dir.join(name);
    }
    dir
}

fn load_crate(root: &Path) -> Result<Crate, String> {
    let mut krate = Crate {
        files: Vec::new(),
        modules: BTreeMap::new(),
        test_modules: BTreeSet::new(),
    };
    // (file, the module it is)
    let mut queue: VecDeque<(PathBuf, ModPath)> = VecDeque::new();
    queue.push_back((root.to_path_buf(), Vec::new()));
    while let Some((path, module)) = queue.pop_front() {
        let src = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let tokens = tokenize(&src);
        let file_index = krate.files.len();
        krate.modules.insert(
            module.clone(),
            Module {
                file: file_index,
                children: BTreeSet::new(),
            },
        );
        let mut scope = Vec::with_capacity(tokens.len());
        // Inline modules open here: (their path, the brace depth at which they close).
        let mut stack: Vec<(ModPath, i32)> = Vec::new();
        let mut depth = 0i32;
        let mut pending_path: Option<String> = None;
        let mut pending_test = false;
        let mut i = 0;
        while i < tokens.len() {
            let current: ModPath = stack
                .last()
                .map(|(p, _)| p.clone())
                .unwrap_or_else(|| module.clone());
            scope.push(current.clone());
            match &tokens[i].tok {
                Tok::Punct('{') => {
                    depth += 1;
                    pending_test = false;
                }
                Tok::Punct('}') => {
                    pending_test = false;
                    if stack.last().is_some_and(|(_, d)| *d == depth) {
                        stack.pop();
                    }
                    depth -= 1;
                }
                Tok::Punct('#') => {
                    // #[path = "…"]
                    let open = if punct(&tokens, i + 1, '!') {
                        i + 2
                    } else {
                        i + 1
                    };
                    let cfg_test = [Some("cfg"), None, Some("test"), None]
                        .iter()
                        .enumerate()
                        .all(|(k, want)| match want {
                            Some(w) => ident(&tokens, open + 1 + k) == Some(*w),
                            None => punct(&tokens, open + 1 + k, if k == 1 { '(' } else { ')' }),
                        });
                    if punct(&tokens, open, '[') && cfg_test {
                        pending_test = true;
                    }
                    if punct(&tokens, open, '[')
                        && ident(&tokens, open + 1) == Some("path")
                        && punct(&tokens, open + 2, '=')
                        && let Some(Tok::Str(s)) = tokens.get(open + 3).map(|t| &t.tok)
                    {
                        pending_path = Some(s.clone());
                    }
                }
                Tok::Ident(kw) if kw == "mod" => {
                    if let Some(name) = ident(&tokens, i + 1) {
                        let name = name.to_string();
                        let mut child = current.clone();
                        child.push(name.clone());
                        if let Some(m) = krate.modules.get_mut(&current) {
                            m.children.insert(name.clone());
                        }
                        if punct(&tokens, i + 2, ';') {
                            let inline: Vec<String> = current[module.len()..].to_vec();
                            let file = match pending_path.take() {
                                // `#[path]` outside inline modules is relative to the file's
                                // directory; inside them, to where their children live.
                                Some(p) if inline.is_empty() => {
                                    path.parent().unwrap_or(Path::new(".")).join(p)
                                }
                                Some(p) => child_dir(&path, &inline).join(p),
                                None => {
                                    let dir = child_dir(&path, &inline);
                                    let flat = dir.join(format!("{name}.rs"));
                                    if flat.exists() {
                                        flat
                                    } else {
                                        dir.join(&name).join("mod.rs")
                                    }
                                }
                            };
                            if file.exists() {
                                queue.push_back((file, child));
                            }
                        } else if punct(&tokens, i + 2, '{') {
                            krate.modules.insert(
                                child.clone(),
                                Module {
                                    file: file_index,
                                    children: BTreeSet::new(),
                                },
                            );
                            if std::mem::take(&mut pending_test) {
                                krate.test_modules.insert(child.clone());
                            }
                            scope.push(current.clone());
                            scope.push(current.clone());
                            depth += 1;
                            stack.push((child, depth));
                            i += 3;
                            pending_path = None;
                            continue;
                        }
                    }
                    pending_path = None;
                    pending_test = false;
                }
                Tok::Punct(';') => {
                    pending_path = None;
                    pending_test = false;
                }
                _ => {}
            }
            i += 1;
        }
        krate.files.push(SourceFile {
            path,
            tokens,
            scope,
        });
    }
    Ok(krate)
}

/// A path named in a file: its segments as written (a `use` tree's leaf with its prefix; a glob
/// or `{self}` leaf is its prefix), and its line.
#[derive(Debug)]
struct Reference {
    segments: Vec<String>,
    line: usize,
}

/// Expands the use tree starting at `i` with `prefix`, pushing every leaf path; returns the
/// index past the tree.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &mut Vec<String>,
    line: usize,
    out: &mut Vec<Reference>,
) -> usize {
    let base = prefix.len();
    if path_sep(tokens, i) {
        // `::name`: an extern crate.
        prefix.push("::".into());
        i += 1;
    }
    loop {
        match tokens.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(s))
                if s == "self" && !prefix.is_empty() && !path_sep(tokens, i + 1) =>
            {
                // `a::{self, …}`: the prefix itself.
                out.push(Reference {
                    segments: prefix.clone(),
                    line,
                });
                i += 1;
                if ident(tokens, i) == Some("as") {
                    i += 2;
                }
                break;
            }
            Some(Tok::Ident(s)) => {
                prefix.push(s.clone());
                i += 1;
                if path_sep(tokens, i) {
                    i += 1;
                    continue;
                }
                out.push(Reference {
                    segments: prefix.clone(),
                    line,
                });
                if ident(tokens, i) == Some("as") {
                    i += 2;
                }
                break;
            }
            Some(Tok::Punct('*')) => {
                out.push(Reference {
                    segments: prefix.clone(),
                    line,
                });
                i += 1;
                break;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                while i < tokens.len() && !punct(tokens, i, '}') {
                    let mut sub = prefix.clone();
                    i = use_tree(tokens, i, &mut sub, line, out);
                    if punct(tokens, i, ',') {
                        i += 1;
                    } else if !punct(tokens, i, '}') {
                        i += 1; // something unexpected: step over it
                    }
                }
                i += 1;
                break;
            }
            _ => break,
        }
    }
    prefix.truncate(base);
    i
}

/// Every path a file names that may reach another module of the crate.
fn references(file: &SourceFile) -> Vec<(usize, Reference)> {
    let tokens = &file.tokens;
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i].tok {
            Tok::Ident(kw) if kw == "use" && !path_sep(tokens, i + 1) => {
                let mut refs = Vec::new();
                let line = tokens[i].line;
                let end = use_tree(tokens, i + 1, &mut Vec::new(), line, &mut refs);
                out.extend(refs.into_iter().map(|r| (i, r)));
                i = end.max(i + 1);
            }
            Tok::Ident(kw) if kw == "pub" && punct(tokens, i + 1, '(') => {
                i = skip_group(tokens, i + 1); // pub(crate), pub(in crate::a)
            }
            Tok::Ident(name)
                if FOREIGN_CODE_MACROS.contains(&name.as_str()) && punct(tokens, i + 1, '!') =>
            {
                i = skip_group(tokens, i + 2);
            }
            Tok::Punct('$') if ident(tokens, i + 1) == Some("crate") => i += 2,
            // A path outside a `use`: `crate::`, `super::` or `self::`, or a relative one
            // (`child::f()`, `child::Type`), which `resolve` counts when its first segment is a
            // child module. The tail of a longer path (`a::b`'s `b`) starts none.
            Tok::Ident(first)
                if first != "Self"
                    && path_sep(tokens, i + 1)
                    && !(i > 0 && path_sep(tokens, i - 1)) =>
            {
                let start = i;
                let mut segments = vec![first.clone()];
                i += 1;
                while path_sep(tokens, i) {
                    match ident(tokens, i + 1) {
                        Some(s) => segments.push(s.to_string()),
                        None => break, // `::<` or `::{` in an expression
                    }
                    i += 2;
                }
                out.push((
                    start,
                    Reference {
                        segments,
                        line: tokens[start].line,
                    },
                ));
            }
            _ => i += 1,
        }
    }
    out
}

/// The deepest module a path names, from the module `at`; `None` for a path outside the crate.
fn resolve(krate: &Crate, at: &ModPath, segments: &[String]) -> Option<ModPath> {
    let mut module: ModPath;
    let mut rest = segments;
    match segments.first().map(String::as_str) {
        Some("crate") => {
            module = Vec::new();
            rest = &segments[1..];
        }
        Some("self") => {
            module = at.clone();
            rest = &segments[1..];
        }
        Some("super") => {
            module = at.clone();
            while rest.first().map(String::as_str) == Some("super") {
                module.pop()?;
                rest = &rest[1..];
            }
        }
        Some("::") | None => return None,
        Some(first) => {
            // A 2018 relative path: a child module of the current module, else an extern crate.
            if !krate.modules.get(at)?.children.contains(first) {
                return None;
            }
            module = at.clone();
        }
    }
    for segment in rest {
        let Some(m) = krate.modules.get(&module) else {
            break;
        };
        if m.children.contains(segment) {
            module.push(segment.clone());
        } else {
            break;
        }
    }
    krate.modules.contains_key(&module).then_some(module)
}

/// For each file, the files it imports and the first place it does (line, the path as written).
type Graph = Vec<BTreeMap<usize, (usize, String)>>;

fn graph(krate: &Crate, with_tests: bool) -> Graph {
    let mut edges: Graph = vec![BTreeMap::new(); krate.files.len()];
    for (from, file) in krate.files.iter().enumerate() {
        for (token, reference) in references(file) {
            let at = &file.scope[token.min(file.scope.len().saturating_sub(1))];
            if !with_tests && krate.test_modules.iter().any(|t| at.starts_with(t)) {
                continue;
            }
            let Some(target) = resolve(krate, at, &reference.segments) else {
                continue;
            };
            let Some(to) = krate.modules.get(&target).map(|m| m.file) else {
                continue;
            };
            if to != from {
                edges[from]
                    .entry(to)
                    .or_insert((reference.line, reference.segments.join("::")));
            }
        }
    }
    edges
}

/// Tarjan's strongly connected components with more than one file.
fn cycles(edges: &Graph) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a Graph,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let targets: Vec<usize> = s.edges[v].keys().copied().collect();
        for w in targets {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort_unstable();
                s.out.push(component);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// A shortest cycle through `start` within `component` (breadth-first), as a list of files.
fn shortest_cycle(edges: &Graph, component: &[usize], start: usize) -> Option<Vec<usize>> {
    let inside: BTreeSet<usize> = component.iter().copied().collect();
    let mut parent: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in edges[v].keys() {
            if !inside.contains(&w) {
                continue;
            }
            if w == start {
                let mut path = vec![v];
                let mut at = v;
                while at != start {
                    at = parent[&at];
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            if w != start && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    None
}

fn main() -> ExitCode {
    let mut list_only = false;
    let mut with_tests = false;
    let mut crates = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--list" => list_only = true,
            "--tests" => with_tests = true,
            "-h" | "--help" => {
                println!("usage: import-cycles [--list] [--tests] [crate-dir…]");
                return ExitCode::SUCCESS;
            }
            flag if flag.starts_with('-') => {
                eprintln!(
                    "unknown option {flag}; usage: import-cycles [--list] [--tests] [crate-dir…]"
                );
                return ExitCode::from(2);
            }
            dir => crates.push(PathBuf::from(dir)),
        }
    }
    if crates.is_empty() {
        crates = DEFAULT_CRATES.iter().map(PathBuf::from).collect();
    }
    let mut total = 0;
    for dir in &crates {
        let root = [dir.join("src/lib.rs"), dir.join("src/main.rs")]
            .into_iter()
            .find(|p| p.exists());
        let Some(root) = root else {
            eprintln!("{}: no src/lib.rs or src/main.rs", dir.display());
            return ExitCode::from(2);
        };
        let krate = match load_crate(&root) {
            Ok(k) => k,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        };
        let edges = graph(&krate, with_tests);
        let name = |f: usize| -> String {
            let p = &krate.files[f].path;
            p.strip_prefix(dir.join("src"))
                .unwrap_or(p)
                .display()
                .to_string()
        };
        let components = cycles(&edges);
        println!(
            "{}: {} files, import cycles: {}",
            dir.display(),
            krate.files.len(),
            components.len()
        );
        for component in &components {
            total += 1;
            let names: Vec<String> = component.iter().map(|&f| name(f)).collect();
            println!(
                "  cycle among {} files: {}",
                component.len(),
                names.join(", ")
            );
            // Every pair importing each other, then a shortest cycle through each file no pair covers.
            let mut covered = BTreeSet::new();
            for (k, &a) in component.iter().enumerate() {
                for &b in &component[k + 1..] {
                    if let (Some((la, pa)), Some((lb, pb))) = (edges[a].get(&b), edges[b].get(&a)) {
                        println!("    {} <-> {}", name(a), name(b));
                        println!("      {}:{} uses {pa}", name(a), la);
                        println!("      {}:{} uses {pb}", name(b), lb);
                        covered.insert(a);
                        covered.insert(b);
                    }
                }
            }
            for &f in component {
                if covered.contains(&f) {
                    continue;
                }
                if let Some(cycle) = shortest_cycle(&edges, component, f) {
                    let mut shown: Vec<String> = cycle.iter().map(|&c| name(c)).collect();
                    shown.push(name(cycle[0]));
                    println!("    {}", shown.join(" -> "));
                    for (k, &a) in cycle.iter().enumerate() {
                        let b = cycle[(k + 1) % cycle.len()];
                        if let Some((line, path)) = edges[a].get(&b) {
                            println!("      {}:{} uses {path}", name(a), line);
                        }
                        covered.insert(a);
                    }
                }
            }
        }
    }
    if total > 0 && !list_only {
        eprintln!("import cycles: {total}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the files of a crate under a fresh directory and counts its cycles.
    fn cycles_in(name: &str, files: &[(&str, &str)]) -> usize {
        let dir = std::env::temp_dir().join(format!("import-cycles-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        let krate = load_crate(&dir.join("lib.rs")).unwrap();
        let found = cycles(&graph(&krate, false)).len();
        fs::remove_dir_all(&dir).unwrap();
        found
    }

    #[test]
    fn a_child_importing_its_parent_alone_is_no_cycle() {
        let files = [
            ("lib.rs", "mod a;\npub struct Chat;\n"),
            ("a.rs", "use super::Chat;\nimpl Chat { fn f(&self) {} }\n"),
        ];
        assert_eq!(cycles_in("alone", &files), 0);
    }

    #[test]
    fn a_parent_calling_into_a_child_that_imports_it_is_a_cycle() {
        let files = [
            ("lib.rs", "mod a;\npub struct Chat;\nfn g() { a::f(); }\n"),
            ("a.rs", "use super::Chat;\npub(crate) fn f() -> Option<Chat> { None }\n"),
        ];
        assert_eq!(cycles_in("call", &files), 1);
    }

    #[test]
    fn a_parent_naming_a_child_s_type_that_imports_it_is_a_cycle() {
        let files = [
            ("lib.rs", "mod a;\npub struct Chat { s: a::Sources }\n"),
            ("a.rs", "use crate::Chat;\npub(crate) struct Sources;\nimpl Chat {}\n"),
        ];
        assert_eq!(cycles_in("type", &files), 1);
    }

    #[test]
    fn an_extern_crate_path_named_like_no_child_is_no_edge() {
        let files = [
            ("lib.rs", "mod a;\npub struct Chat;\nfn g() { serde_json::json!({}); }\n"),
            ("a.rs", "use super::Chat;\n"),
        ];
        assert_eq!(cycles_in("extern", &files), 0);
    }

    #[test]
    fn a_use_and_a_pub_use_are_edges() {
        let files = [
            ("lib.rs", "mod a;\npub use a::Tool;\npub struct Chat;\n"),
            ("a.rs", "use super::Chat;\npub struct Tool(Chat);\n"),
        ];
        assert_eq!(cycles_in("use", &files), 1);
    }
}
