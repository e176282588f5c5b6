//! The shape of the code, checked from its text: every top-level module of `src/` imports only
//! from layers below its own (the order is written once, in [`LAYERS`]), no function is longer
//! than a screen ([`FN_MAX_LINES`]) and no file longer than [`FILE_MAX_LINES`] lines of code.
//! Test code (`#[cfg(test)]` items, `tests.rs` and `*_tests.rs` files) is not counted.
//! `python3 ../shared/tools/shape.py src` measures the same from outside.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, from the bottom. A module may import from the layers before it in this list,
/// never from one after it; modules on one line share a layer and import each other freely.
/// Data flows study -> run -> record -> results -> report; the layers below the study are
/// the vocabulary it is written in (docs/architecture.md draws it).
const LAYERS: &[&[&str]] = &[
    &["units", "model"],
    &["record"],
    &["verify"],
    &["workload"],
    &["targets"],
    &["study"],
    &["results"],
    &["run"],
    &["report"],
    &["cli", "fuzzing"],
];

const FN_MAX_LINES: usize = 120;
const FILE_MAX_LINES: usize = 700;

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

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

/// The modules named after `crate::` in a line: `crate::a::b` and `crate::{a::x, b}`.
fn crate_refs(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = line;
    while let Some(k) = rest.find("crate::") {
        let before = rest[..k].chars().last();
        rest = &rest[k + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` or `mycrate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 1 => {
                        found.push(ident(&group[i..]));
                        start = false;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(ident(rest));
        }
    }
    found
}

struct FileShape {
    /// Path relative to `src/`.
    rel: String,
    module: String,
    /// (line, module imported)
    imports: Vec<(usize, String)>,
    /// (line, name, length in lines)
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

fn shape(src: &Path, path: &Path) -> FileShape {
    let rel = path
        .strip_prefix(src)
        .unwrap()
        .to_string_lossy()
        .to_string();
    let module = rel
        .split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string();
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut block = false;
    let clean: Vec<String> = lines.iter().map(|l| strip(l, &mut block)).collect();
    let mut in_test = vec![is_test_file(&rel); clean.len()];
    let mut i = 0;
    while i < clean.len() {
        if lines[i].contains("#[cfg(test)]") {
            let end = item_end(&clean, i);
            in_test[i..=end].iter_mut().for_each(|t| *t = true);
            i = end + 1;
        } else {
            i += 1;
        }
    }
    let mut imports = Vec::new();
    let mut functions = Vec::new();
    for (k, l) in clean.iter().enumerate() {
        if in_test[k] {
            continue;
        }
        for m in crate_refs(l) {
            if m != module && !m.is_empty() {
                imports.push((k + 1, m));
            }
        }
        if let Some(name) = fn_name(l) {
            let head = clean[k..clean.len().min(k + 12)].concat();
            if head.contains('{') && !l.trim_end().ends_with(';') {
                let end = item_end(&clean, k);
                functions.push((k + 1, name, end - k + 1));
            }
        }
    }
    FileShape {
        code_lines: in_test.iter().filter(|t| !**t).count(),
        rel,
        module,
        imports,
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

fn shapes() -> Vec<FileShape> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.iter().map(|p| shape(&src, p)).collect()
}

#[test]
fn every_module_imports_only_from_the_layers_below_it() {
    let mut wrong = Vec::new();
    let mut unplaced = BTreeMap::new();
    for f in shapes() {
        if f.rel == "main.rs" || f.rel == "lib.rs" {
            continue;
        }
        let Some(own) = layer_of(&f.module) else {
            unplaced.insert(f.module.clone(), f.rel.clone());
            continue;
        };
        for (line, m) in &f.imports {
            match layer_of(m) {
                Some(l) if l < own || LAYERS[own].contains(&m.as_str()) => {}
                Some(_) => wrong.push(format!(
                    "src/{}:{line}: {} imports {m}, a layer above it",
                    f.rel, f.module
                )),
                None => {
                    unplaced.insert(m.clone(), format!("src/{}:{line}", f.rel));
                }
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules with no layer in tests/layers.rs LAYERS (add them where they belong): {unplaced:?}"
    );
    assert!(
        wrong.is_empty(),
        "{} imports against the layers (order in tests/layers.rs):\n{}",
        wrong.len(),
        wrong.join("\n")
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
                .map(move |(line, name, n)| format!("src/{}:{line}: fn {name}: {n} lines", f.rel))
        })
        .collect();
    assert!(
        long.is_empty(),
        "{} functions above {FN_MAX_LINES} lines: split them by role:\n{}",
        long.len(),
        long.join("\n")
    );
}

#[test]
fn every_file_stays_under_the_limit() {
    let long: Vec<String> = shapes()
        .iter()
        .filter(|f| f.code_lines > FILE_MAX_LINES)
        .map(|f| format!("src/{}: {} lines of code", f.rel, f.code_lines))
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
    assert_eq!(
        crate_refs("use crate::{model::Op, record::{self, OpKind}, units};"),
        ["model", "record", "units"]
    );
    assert_eq!(
        crate_refs("x: crate::study::plan::Plan, $crate::y"),
        ["study"]
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
    // A made-up file: one back import, a 3-line function, a test module not counted.
    let dir = std::env::temp_dir().join(format!("storlab-layers-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("record")).unwrap();
    let file = src.join("record/mod.rs");
    std::fs::write(
        &file,
        "use crate::report::x;\nfn a() {\n}\n#[cfg(test)]\nmod tests {\n    use crate::run;\n}\n",
    )
    .unwrap();
    let s = shape(&src, &file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(s.module, "record");
    assert_eq!(s.imports, [(1, "report".to_string())]);
    assert_eq!(s.functions, [(2, "a".to_string(), 2)]);
    assert_eq!(s.code_lines, 3);
}
