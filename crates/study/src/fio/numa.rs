//! fio's NUMA options. `numa_cpu_nodes`: the job's threads run on the CPUs of those nodes
//! (read from /sys/devices/system/node), as fio's `numa_run_on_node_mask`, which fio applies
//! after `cpus_allowed`, so it wins whatever the order. `numa_mem_policy`: storlab does not
//! set a memory policy (set_mempolicy); it is taken on a machine of one node, where every
//! policy puts the memory on that node, said, and refused with the way round elsewhere.

use super::job::Job;
use super::parse::Entry;
use storlab_model::cpus::CpuList;

const NODES: &str = "/sys/devices/system/node";

/// The machine's NUMA nodes (a list in the CPU-list syntax, as Linux writes it).
fn online() -> Result<CpuList, String> {
    let path = format!("{NODES}/online");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    CpuList::parse(text.trim())
}

/// The nodes of `value` (`all`, or a list such as `0-1,3`), each one the machine has.
fn nodes(value: &str, name: &str) -> Result<CpuList, String> {
    let machine = online().map_err(|m| format!("{name}={value}: {m}"))?;
    if value == "all" {
        return Ok(machine);
    }
    let asked = CpuList::parse(value).map_err(|m| format!("{name}={value}: {m}"))?;
    let missing = asked.missing_from(&machine);
    if !missing.is_empty() {
        return Err(format!(
            "{name}={value}: node {} is not one of this machine's NUMA nodes ({machine})",
            missing[0]
        ));
    }
    Ok(asked)
}

/// The CPUs of `nodes`.
fn cpus_of(nodes: &CpuList, name: &str) -> Result<CpuList, String> {
    let mut cpus = Vec::new();
    for n in nodes.cpus() {
        let path = format!("{NODES}/node{n}/cpulist");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{name}: cannot read {path}: {e}"))?;
        // A node without CPUs (memory only) has an empty list.
        if !text.trim().is_empty() {
            cpus.extend_from_slice(CpuList::parse(text.trim())?.cpus());
        }
    }
    CpuList::new(cpus).ok_or_else(|| format!("{name}: the nodes named have no CPU"))
}

/// `numa_mem_policy`'s nodes: `default` and `local` none, `prefer:N`, `bind:LIST`,
/// `interleave:LIST` theirs.
fn policy_nodes(value: &str) -> Result<Option<&str>, String> {
    match value.split_once(':') {
        None if ["default", "local"].contains(&value) => Ok(None),
        Some((mode, list)) if ["prefer", "bind", "interleave"].contains(&mode) => Ok(Some(list)),
        _ => Err(format!(
            "numa_mem_policy={value}: fio's policies are default, prefer:NODE, bind:NODES, interleave:NODES and local"
        )),
    }
}

/// Applies one NUMA option; false when `e` is none of them.
pub fn apply_numa(job: &mut Job, e: &Entry, canonical: &str) -> Result<bool, String> {
    let c = &mut job.control;
    match canonical {
        "numa_cpu_nodes" => {
            let v = e.needed()?;
            c.cpus = Some(cpus_of(&nodes(v, &e.name)?, &e.name)?);
            c.numa_cpus = true;
        }
        "numa_mem_policy" => {
            let v = e.needed()?;
            if let Some(list) = policy_nodes(v)? {
                nodes(list, &e.name)
                    .map_err(|m| m.replacen(&format!("={list}:"), &format!("={v}:"), 1))?;
            }
            let machine = online().map_err(|m| format!("{}={v}: {m}", e.name))?;
            if machine.cpus().len() > 1 {
                return Err(format!(
                    "{}={v}: storlab does not set a memory policy (set_mempolicy) and this machine has NUMA nodes {machine}: run storlab under numactl (e.g. numactl --membind=0 storlab fio ...)",
                    e.name
                ));
            }
            c.numa_mem = Some(v.to_string());
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// What storlab does otherwise than fio with the job's NUMA options.
pub fn notes(job: &Job) -> Vec<String> {
    job.control
        .numa_mem
        .iter()
        .map(|v| {
            format!(
                "job `{}`: numa_mem_policy={v} taken: this machine has one NUMA node, where every policy puts the memory (storlab sets none)",
                job.name
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::fio::options::resolve;
    use crate::fio::parse::parse;

    #[test]
    fn nodes_become_their_cpus_and_a_policy_is_taken_on_one_node() {
        let Ok(online) = super::online() else {
            return; // no NUMA information in this sandbox
        };
        let first = online.cpus()[0];
        let text = format!(
            "[a]\nnuma_cpu_nodes={first}\ncpus_allowed=0\nnuma_mem_policy=local\n[b]\nnuma_cpu_nodes=40\n"
        );
        let r = resolve(&parse("job.fio", &text, &|_| None).unwrap());
        let e = r.unwrap_err();
        assert!(
            e[0].message
                .contains("not one of this machine's NUMA nodes"),
            "{e:?}"
        );
        let j = resolve(&parse("job.fio", &text[..text.find("[b]").unwrap()], &|_| None).unwrap());
        if online.cpus().len() == 1 {
            let j = j.unwrap();
            // The node's CPUs, whatever cpus_allowed says after it (fio applies the node last).
            let node = super::cpus_of(&online, "t").unwrap();
            assert_eq!(j[0].control.cpus.as_ref(), Some(&node));
            assert!(super::notes(&j[0])[0].contains("one NUMA node"));
        } else {
            assert!(j.unwrap_err()[0].message.contains("numactl"));
        }
        let e = resolve(&parse("job.fio", "[a]\nnuma_mem_policy=fancy\n", &|_| None).unwrap());
        assert!(e.unwrap_err()[0].message.contains("fio's policies"));
    }
}
