//! A checkpoint's files: the model's tensors (DLIO's `checkpointing/base_checkpointing.py`),
//! split over ranks by tensor and pipeline parallelism and, with ZeRO stage 3, over the
//! data-parallel ranks too; each rank's files named as DLIO names them.

use serde::Serialize;

/// A tensor's element type (DLIO's `model_datatype`, `optimizer_datatype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Datatype {
    Int8,
    Uint8,
    Fp16,
    Bf16,
    Fp32,
    Fp64,
}

impl Datatype {
    pub(crate) const NAMES: &'static str = "int8, uint8, fp16, bf16, fp32, fp64";

    pub fn bytes(self) -> u64 {
        match self {
            Datatype::Int8 | Datatype::Uint8 => 1,
            Datatype::Fp16 | Datatype::Bf16 => 2,
            Datatype::Fp32 => 4,
            Datatype::Fp64 => 8,
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Datatype> {
        Some(match s {
            "int8" => Datatype::Int8,
            "uint8" => Datatype::Uint8,
            "fp16" => Datatype::Fp16,
            "bf16" => Datatype::Bf16,
            "fp32" => Datatype::Fp32,
            "fp64" => Datatype::Fp64,
            _ => return None,
        })
    }
}

/// The transformer's dimensions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Transformer {
    pub layers: u64,
    pub hidden_size: u64,
    pub ffn_hidden_size: u64,
    pub attention_heads: u64,
    pub kv_heads: u64,
    pub vocab_size: u64,
}

impl Transformer {
    /// Parameters of the whole model (DLIO's `get_num_parameters`).
    pub fn parameters(&self) -> u64 {
        let h = self.hidden_size;
        let dim_kv = h / self.attention_heads * self.kv_heads;
        let embedding = self.vocab_size * h;
        let per_layer = h
            + h * (h + 2 * dim_kv)
            + h * h
            + h
            + self.ffn_hidden_size * 2 * h
            + self.ffn_hidden_size * h;
        embedding + per_layer * self.layers + h + embedding
    }

    /// The tensors of layer `i` (0: the embedding; `layers + 1`: the LM head; `layers + 2`:
    /// the final norm), elements, as one rank holds them.
    fn layer_tensors(&self, i: u64, tp: u64, shard: u64) -> Vec<u64> {
        let h = self.hidden_size;
        let dim_kv = h / self.attention_heads * self.kv_heads;
        let f = self.ffn_hidden_size;
        if i == 0 || i == self.layers + 1 {
            vec![h * self.vocab_size / tp / shard]
        } else if i == self.layers + 2 {
            vec![h / shard]
        } else {
            vec![
                h / shard,
                h * (h + 2 * dim_kv) / tp / shard,
                h * h / tp / shard,
                h / shard,
                h * 2 * f / tp / shard,
                h * f / tp / shard,
            ]
        }
    }
}

/// How the model is split over ranks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Parallelism {
    pub tensor: u32,
    pub pipeline: u32,
    pub data: u32,
    pub zero_stage: u32,
}

impl Parallelism {
    /// Ranks of the whole model: tensor x pipeline x data.
    pub fn world(&self) -> u32 {
        self.tensor * self.pipeline * self.data
    }
}

/// One file of one checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointFile {
    pub rank: u32,
    /// Its name in the checkpoint's folder (DLIO's).
    pub name: String,
    pub bytes: u64,
}

/// The files of one checkpoint of a run's ranks, rank by rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub files: Vec<CheckpointFile>,
    /// Rank `r`'s files are `files[first[r]..first[r + 1]]`.
    first: Vec<u32>,
}

impl Layout {
    pub fn rank_files(&self, rank: u32) -> std::ops::Range<usize> {
        self.first[rank as usize] as usize..self.first[rank as usize + 1] as usize
    }

    pub fn ranks(&self) -> u32 {
        (self.first.len() - 1) as u32
    }

    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }
}

/// The folder of checkpoint `k` (from 0): DLIO's `global_epoch1_step{k + 1}`.
pub fn checkpoint_folder(k: u32) -> String {
    format!("global_epoch1_step{}", k + 1)
}

/// The files of one checkpoint of ranks `0..ranks` of model `t` split as `p` (DLIO's
/// `save_checkpoint`), its parameters stored as `model` and the optimizer's state as
/// `optimizer`.
pub fn layout(
    t: &Transformer,
    p: &Parallelism,
    model: Datatype,
    optimizer: Datatype,
    ranks: u32,
) -> Layout {
    let (tp, pp, dp) = (
        u64::from(p.tensor),
        u64::from(p.pipeline),
        u64::from(p.data),
    );
    let mp = tp * pp;
    let shard = if p.zero_stage >= 3 { dp } else { 1 };
    let optimizer_share = if p.zero_stage > 0 {
        t.parameters() / (dp * mp)
    } else {
        t.parameters() / mp
    };
    let mut files = Vec::new();
    let mut first = vec![0u32];
    for r in 0..u64::from(ranks) {
        let (dp_rank, mp_rank, pp_rank) = (r / mp, r % mp, (r / tp) % pp);
        // ZeRO stage 0: only the first model-parallel group saves.
        let saves = p.zero_stage > 0 || r < mp;
        let model_saved = saves && !(matches!(p.zero_stage, 1 | 2) && dp_rank != 0);
        let (start, end) = layer_range(t.layers, pp, pp_rank);
        let rank = r as u32;
        let layer_bytes =
            |i: u64| -> u64 { t.layer_tensors(i, tp, shard).iter().sum::<u64>() * model.bytes() };
        if model_saved {
            if matches!(p.zero_stage, 1 | 2) && pp > 1 {
                for i in start..=end {
                    files.push(CheckpointFile {
                        rank,
                        name: format!("layer_{i}-model_{mp_rank}_model_states.pt"),
                        bytes: layer_bytes(i),
                    });
                }
            } else {
                let name = if matches!(p.zero_stage, 1 | 2) {
                    format!("model_{mp_rank}_model_states.pt")
                } else {
                    format!("zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_model_states.pt")
                };
                files.push(CheckpointFile {
                    rank,
                    name,
                    bytes: (start..=end).map(layer_bytes).sum(),
                });
            }
        }
        if saves && optimizer_share > 0 {
            files.push(CheckpointFile {
                rank,
                name: format!("zero_pp_rank_{dp_rank}_mp_rank_{mp_rank}_optim_states.pt"),
                bytes: 3 * (optimizer_share + 5 * t.hidden_size) * optimizer.bytes(),
            });
        }
        first.push(files.len() as u32);
    }
    Layout { files, first }
}

/// The layers a pipeline stage holds, first and last (DLIO's `get_layer_index`: the
/// embedding, 0, on the first stage; the LM head and the final norm on the last).
fn layer_range(layers: u64, pp: u64, pp_rank: u64) -> (u64, u64) {
    let (per, rem) = ((layers / pp) as i64, (layers % pp) as i64);
    let r = pp_rank as i64;
    let (mut start, mut end) = if r < rem {
        let s = r * (per + 1) + 1;
        (s, s + per)
    } else {
        let s = rem * (per + 1) + (r - rem) * per + 1;
        (s, s + per - 1)
    };
    if pp_rank == pp - 1 {
        end = layers as i64 + 2;
    }
    if pp_rank == 0 {
        start = 0;
    }
    if end < start {
        return (1, 0);
    }
    (start as u64, end as u64)
}
