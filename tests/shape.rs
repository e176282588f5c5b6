//! The shape of the code, checked from its text, in every crate of the workspace (`crates/*`)
//! and the binary (`src/`): no function longer than a screen ([`FN_MAX_LINES`]), no file longer
//! than [`FILE_MAX_LINES`], both counted in lines of code (comments and blank lines are free),
//! and no import circle inside a crate: within every module, its child modules use each other
//! one way only (a path through `crate::`, `super::` or `self::` to a sibling counts). Between
//! crates Cargo itself refuses a cycle. Test code (`#[cfg(test)]` items, `tests.rs` and
//! `*_tests.rs` files) is not counted. `python3 ../shared/tools/shape.py crates/NAME/src`
//! measures the first two from outside.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const FN_MAX_LINES: usize = 120;
const FILE_MAX_LINES: usize = 700;

/// A line without its comment, strings and character literals; `block` carries a `/* */`
/// comment over lines.
fn strip(line: &str, block: &mut bool) -> String {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if *block {
            match line[i..].find("*/") {
                Some(j) => {
                    *block = false;
                    i += j + 2;
                    continue;
                }
                None => return out,
            }
        }
        let rest = &line[i..];
        if rest.starts_with("//") {
            break;
        }
        if rest.starts_with("/*") {
            *block = true;
            i += 2;
            continue;
        }
        if let Some(end) = raw_string_len(rest) {
            out.push_str("\"\"");
            i += end;
            continue;
        }
        if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
            continue;
        }
        if b[i] == b'\'' {
            // A character literal ('x', '\n', '{'); a lifetime ('a) is kept.
            let len = if rest.len() > 3 && b[i + 1] == b'\\' {
                rest[2..].find('\'').map(|k| k + 3)
            } else if rest.len() >= 3 && rest[1..].chars().nth(1) == Some('\'') {
                Some(1 + rest[1..].chars().next().map_or(1, char::len_utf8) + 1)
            } else {
                None
            };
            if let Some(len) = len {
                i += len;
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The length of a raw string literal at the start of `s` (`r"..."`, `r#"..."#`), if it is one
/// closed on this line.
fn raw_string_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('r')?;
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    let body = rest[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    body.find(&close).map(|k| 1 + hashes + 1 + k + close.len())
}

/// The index of the line where the item starting at `from` ends (its braces matched), or
/// `from` for an item that ends with `;` before any brace.
fn item_end(clean: &[String], from: usize) -> usize {
    let mut depth = 0i64;
    let mut started = false;
    for (j, l) in clean.iter().enumerate().skip(from) {
        depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
        started |= l.contains('{');
        if started && depth <= 0 {
            return j;
        }
        if !started && l.trim_end().ends_with(';') {
            return j;
        }
    }
    clean.len() - 1
}

/// The module paths named on a stripped line, resolved from `module` (the file's own module
/// path in its crate): `crate::a::b`, `super::x`, `self::y`, and the members of a group
/// `crate::{a::x, b}`. Each comes back as the whole path; the caller finds its module.
fn path_refs(line: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b'$'
                || bytes[i - 1] == b':');
        let head = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|h| rest.starts_with(h));
        let Some(head) = head.filter(|_| boundary) else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut base: Vec<String> = match head {
            "crate::" => Vec::new(),
            "self::" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        let mut j = i + head.len();
        while line[j..].starts_with("super::") {
            base.pop();
            j += "super::".len();
        }
        let tail = &line[j..];
        if let Some(group) = tail.strip_prefix('{') {
            for member in group_members(group) {
                let segs = idents(member.trim());
                if !segs.is_empty() {
                    found.push(base.iter().cloned().chain(segs).collect());
                }
            }
        } else {
            found.push(base.into_iter().chain(idents(tail)).collect());
        }
        i = j;
    }
    found
}

/// The members of a group `a::x, b::{self, y}, c}` (the text after its `{`), split at its own
/// commas, not at those of a nested group, up to its closing brace.
fn group_members(group: &str) -> Vec<&str> {
    let mut members = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                members.push(&group[start..i]);
                return members;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                members.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    members.push(&group[start..]);
    members
}

/// The identifiers of a path `a::b::c` at the start of `s`.
fn idents(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let id: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if id.is_empty() {
            break;
        }
        rest = &rest[id.len()..];
        out.push(id);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out
}

struct FileShape {
    /// Path from the workspace root.
    rel: String,
    /// The crate's folder name (`src` for the binary).
    krate: String,
    /// The module path inside the crate (empty for its root).
    module: Vec<String>,
    /// Paths named outside test code.
    refs: Vec<Vec<String>>,
    /// (line, name, lines of code)
    functions: Vec<(usize, String, usize)>,
    code_lines: usize,
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/")
}

/// The name of the function declared on a stripped line, if one is.
fn fn_name(line: &str) -> Option<String> {
    let mut line = line.trim_start();
    if let Some(scoped) = line.strip_prefix("pub(") {
        line = scoped.split_once(')').map_or("", |(_, rest)| rest);
    }
    let words: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == '(' || c == '<')
        .filter(|w| !w.is_empty())
        .collect();
    let k = words.iter().position(|w| *w == "fn")?;
    let allowed = |w: &str| {
        w.starts_with("pub")
            || matches!(
                w,
                "const" | "async" | "unsafe" | "extern" | "\"\"" | "default"
            )
    };
    if !words[..k].iter().all(|w| allowed(w)) {
        return None;
    }
    words.get(k + 1).map(|w| w.to_string())
}

/// A file's module path inside its crate: `a/b.rs` and `a/b/mod.rs` are `a::b`.
fn module_path(rel_in_src: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel_in_src
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Marks the lines of `#[cfg(test)]` items.
fn test_lines(lines: &[&str], clean: &[String], whole_file: bool) -> Vec<bool> {
    let mut in_test = vec![whole_file; clean.len()];
    let mut i = 0;
    while i < clean.len() {
        if lines[i].contains("#[cfg(test)]") {
            let end = item_end(clean, i);
            in_test[i..=end].iter_mut().for_each(|t| *t = true);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    in_test
}

fn shape(root: &Path, krate: &str, src: &Path, path: &Path) -> FileShape {
    let in_src = path
        .strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .to_string();
    let rel = path
        .strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .to_string();
    let module = module_path(&in_src);
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut block = false;
    let clean: Vec<String> = lines.iter().map(|l| strip(l, &mut block)).collect();
    let in_test = test_lines(&lines, &clean, is_test_file(&in_src));
    let is_code = |k: usize| !in_test[k] && !clean[k].trim().is_empty();
    let mut refs = Vec::new();
    let mut functions = Vec::new();
    for (k, l) in clean.iter().enumerate() {
        if in_test[k] {
            continue;
        }
        refs.extend(path_refs(l, &module));
        if let Some(name) = fn_name(l) {
            let head = clean[k..clean.len().min(k + 12)].concat();
            if head.contains('{') && !l.trim_end().ends_with(';') {
                let end = item_end(&clean, k);
                let code = (k..=end).filter(|&j| is_code(j)).count();
                functions.push((k + 1, name, code));
            }
        }
    }
    FileShape {
        code_lines: (0..clean.len()).filter(|&k| is_code(k)).count(),
        rel,
        krate: krate.to_string(),
        module,
        refs,
        functions,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Every Rust file of the workspace's crates and of the binary.
fn shapes() -> Vec<FileShape> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut srcs = vec![("src".to_string(), root.join("src"))];
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    crates.sort();
    for c in crates {
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        srcs.push((name, c.join("src")));
    }
    let mut out = Vec::new();
    for (krate, src) in srcs {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        out.extend(files.iter().map(|p| shape(root, &krate, &src, p)));
    }
    out
}

/// The circles among sibling modules of one crate: for every use of a module `b` from inside
/// a module `a` where neither contains the other, the edge joins the children of their
/// closest common parent. Each circle comes back as its modules, sorted, joined by spaces.
fn circles(files: &[&FileShape]) -> Vec<String> {
    let modules: BTreeSet<&[String]> = files.iter().map(|f| f.module.as_slice()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for f in files {
        for r in &f.refs {
            let Some(target) = (0..=r.len())
                .rev()
                .map(|k| &r[..k])
                .find(|p| modules.contains(p))
            else {
                continue;
            };
            let common = f
                .module
                .iter()
                .zip(target)
                .take_while(|(a, b)| a == b)
                .count();
            if common == f.module.len() || common == target.len() {
                continue; // itself, a parent or a child
            }
            edges
                .entry(f.module[..=common].to_vec())
                .or_default()
                .insert(target[..=common].to_vec());
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.iter().map(|m| m.join("::")).collect::<Vec<_>>().join(" "))
        .collect()
}

/// Tarjan's strongly connected components of a small graph, each sorted.
fn strongly_connected(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a [String], (usize, usize)>,
        stack: Vec<&'a [String]>,
        found: Vec<Vec<Vec<String>>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a [String]) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let low = match self.index.get(w.as_slice()) {
                    None => {
                        self.visit(w);
                        self.index[w.as_slice()].1
                    }
                    Some(&(i, _)) if self.stack.contains(&w.as_slice()) => i,
                    Some(_) => continue,
                };
                let e = self.index.get_mut(v).unwrap();
                e.1 = e.1.min(low);
            }
            let (i, low) = self.index[v];
            if i == low {
                let at = self.stack.iter().rposition(|m| *m == v).unwrap();
                let mut c: Vec<Vec<String>> =
                    self.stack.drain(at..).map(<[String]>::to_vec).collect();
                c.sort();
                self.found.push(c);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_slice()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_import_circle_inside_a_crate() {
    let all = shapes();
    let mut by_crate: BTreeMap<&str, Vec<&FileShape>> = BTreeMap::new();
    for f in &all {
        by_crate.entry(f.krate.as_str()).or_default().push(f);
    }
    let found: Vec<String> = by_crate
        .iter()
        .flat_map(|(k, files)| circles(files).into_iter().map(move |c| format!("{k}: {c}")))
        .collect();
    assert!(
        found.is_empty(),
        "{} import circles inside crates (modules that use each other; make one side not need the other):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn every_function_fits_a_screen() {
    let long: Vec<String> = shapes()
        .iter()
        .flat_map(|f| {
            f.functions
                .iter()
                .filter(|(_, _, n)| *n > FN_MAX_LINES)
                .map(move |(line, name, n)| {
                    format!("{}:{line}: fn {name}: {n} lines of code", f.rel)
                })
        })
        .collect();
    assert!(
        long.is_empty(),
        "{} functions above {FN_MAX_LINES} lines of code: split them by role:\n{}",
        long.len(),
        long.join("\n")
    );
}

#[test]
fn every_file_stays_under_the_limit() {
    let long: Vec<String> = shapes()
        .iter()
        .filter(|f| f.code_lines > FILE_MAX_LINES)
        .map(|f| format!("{}: {} lines of code", f.rel, f.code_lines))
        .collect();
    assert!(
        long.is_empty(),
        "{} files above {FILE_MAX_LINES} lines of code: split them by role:\n{}",
        long.len(),
        long.join("\n")
    );
}

#[test]
fn the_checks_see_what_they_check() {
    let mut block = false;
    assert_eq!(
        strip(r#"let s = "crate::run"; // crate::report"#, &mut block),
        r#"let s = ""; "#
    );
    assert_eq!(
        strip("let c = '{'; x /* crate::a", &mut block),
        "let c = ; x "
    );
    assert!(block);
    assert_eq!(
        strip("still */ use crate::b;", &mut block),
        " use crate::b;"
    );
    let m = |s: &str| {
        s.split("::")
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        path_refs(
            "use crate::{model::Op, record::{self, OpKind}, units};",
            &[]
        ),
        [m("model::Op"), m("record"), m("units")]
    );
    assert_eq!(
        path_refs("use super::super::x::Y;", &m("a::b::c")),
        [m("a::x::Y")]
    );
    assert_eq!(
        path_refs("self::k::f(); $crate::z", &m("a")),
        [m("a::k::f")]
    );
    assert_eq!(
        fn_name("    pub(crate) fn run_one<T>(x: u32) {").as_deref(),
        Some("run_one")
    );
    assert_eq!(
        fn_name("pub(in crate::study) fn parse(").as_deref(),
        Some("parse")
    );
    assert_eq!(fn_name("    let f = |x| x; // fn"), None);
    // A made-up crate: a function of 3 code lines among comments and blank lines, a test
    // module not counted, and two siblings that use each other through `super::`.
    let dir = std::env::temp_dir().join(format!("storlab-shape-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    let file = src.join("a/mod.rs");
    std::fs::write(
        &file,
        "use super::b::x;\n// note\nfn a() {\n\n    // why\n    x();\n}\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub fn x() { crate::a::a() }\n").unwrap();
    std::fs::write(src.join("c.rs"), "pub fn y() { super::b::x() }\n").unwrap();
    let shapes: Vec<FileShape> = ["a/mod.rs", "b.rs", "c.rs"]
        .iter()
        .map(|f| shape(&dir, "k", &src, &src.join(f)))
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    let s = &shapes[0];
    assert_eq!(s.module, m("a"));
    assert_eq!(s.refs, [m("b::x")]);
    assert_eq!(s.functions, [(3, "a".to_string(), 3)]);
    assert_eq!(s.code_lines, 4);
    assert_eq!(circles(&shapes.iter().collect::<Vec<_>>()), ["a b"]);
}
