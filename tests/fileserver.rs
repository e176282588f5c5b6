//! `studies/fileserver.toml` in quick mode against the test file servers (Samba and
//! NFS-Ganesha from scripts/fileservers.sh): the brief's experiment end to end, 5 clients x 5
//! shares over SMB and over NFS, every point with its 25 share targets, no error, and
//! IOmeter's result file with its ALL, MANAGER (client) and DISK (share) rows.

mod common;

use common::{Lab, server, text};

#[test]
fn the_file_server_study_runs_25_shares_over_smb_and_nfs_with_iometers_rows() {
    if server("STORLAB_SMB_SERVER").is_none() || server("STORLAB_NFS_SERVER").is_none() {
        return;
    }
    let study = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("studies/fileserver.toml");
    let lab = Lab::new();
    let o = lab
        .cmd()
        // Small test files: 50 of them are created (and filled) on the servers.
        .env("STORLAB_FILESERVER_SIZE", "2MiB")
        .args(["run", study.to_str().unwrap(), "--quick", "--json", "-q"])
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let runs: serde_json::Value = serde_json::from_str(&out).unwrap();
    let runs = runs.as_array().unwrap();
    // 2 protocols x 4 workloads x 2 queue depths.
    assert_eq!(runs.len(), 16);
    for r in runs {
        assert_eq!(r["status"], "complete", "{r}");
        let targets = r["targets"].as_array().unwrap();
        assert_eq!(targets.len(), 25, "{}", r["step"]);
        let proto = &r["step"].as_str().unwrap()[..3];
        for t in targets {
            assert_eq!(t["target-type"], proto, "{t}");
            assert!(t["ops"].as_u64().unwrap() > 0, "{t}");
            assert_eq!(t["errors"], 0, "{t}");
        }
    }
    let folder = std::fs::read_dir(lab.results())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap();
    let csv = std::fs::read_to_string(folder.join("iometer.csv")).unwrap();
    let rows = |kind: &str| {
        csv.lines()
            .filter(|l| l.starts_with(&format!("{kind},")))
            .count()
    };
    assert_eq!(rows("ALL"), 16, "{csv}");
    assert_eq!(rows("MANAGER"), 16 * 5, "{csv}");
    assert_eq!(rows("DISK"), 16 * 25, "{csv}");
    for c in 1..=5 {
        assert!(csv.contains(&format!("MANAGER,client-{c},")), "{csv}");
    }
    // The password is in no result file.
    let password = std::env::var("STORLAB_SMB_SERVER")
        .unwrap()
        .split_once("://")
        .and_then(|(_, r)| r.split_once('@'))
        .and_then(|(u, _)| u.split_once(':'))
        .map(|(_, p)| p.to_string())
        .unwrap();
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut dirs = vec![folder.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 16 * 3, "{files:?}");
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            assert!(!text.contains(&password), "{}", f.display());
        }
    }
}
