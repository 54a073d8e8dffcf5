//! Bad GGUF files get an error naming what was read, never a panic or a
//! huge allocation.

use rlx_gguf::{Gguf, GgufError};

/// A GGUF writer for hand-made files.
#[derive(Default)]
struct File {
    kv: Vec<u8>,
    kv_count: u64,
    infos: Vec<u8>,
    tensor_count: u64,
    data: Vec<u8>,
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl File {
    fn kv_u32(mut self, key: &str, v: u32) -> Self {
        string(&mut self.kv, key);
        self.kv.extend(4u32.to_le_bytes());
        self.kv.extend(v.to_le_bytes());
        self.kv_count += 1;
        self
    }

    fn kv_str(mut self, key: &str, v: &str) -> Self {
        string(&mut self.kv, key);
        self.kv.extend(8u32.to_le_bytes());
        string(&mut self.kv, v);
        self.kv_count += 1;
        self
    }

    fn tensor(mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> Self {
        string(&mut self.infos, name);
        self.infos.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            self.infos.extend(d.to_le_bytes());
        }
        self.infos.extend(ty.to_le_bytes());
        self.infos.extend(offset.to_le_bytes());
        self.tensor_count += 1;
        self
    }

    fn data(mut self, bytes: &[u8]) -> Self {
        self.data.extend(bytes);
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(self.tensor_count.to_le_bytes());
        out.extend(self.kv_count.to_le_bytes());
        out.extend(&self.kv);
        out.extend(&self.infos);
        while !out.len().is_multiple_of(32) {
            out.push(0);
        }
        out.extend(&self.data);
        out
    }
}

fn err(bytes: &[u8]) -> String {
    Gguf::parse(bytes).unwrap_err().to_string()
}

#[test]
fn a_well_formed_file_reads() {
    let f = File::default().kv_u32("a.b", 7).tensor("t", &[4, 2], 0, 0).data(&[0u8; 32]);
    let bytes = f.bytes();
    let g = Gguf::parse(&bytes).unwrap();
    assert_eq!(g.get("a.b").and_then(|v| v.as_u64()), Some(7));
    let t = g.tensor("t").unwrap();
    assert_eq!(t.shape(), [2, 4]);
    assert_eq!(g.dequantize(t), vec![0.0; 8]);
}

#[test]
fn every_truncation_is_an_error() {
    let f = File::default().kv_u32("a.b", 7).tensor("t", &[4, 2], 0, 0).data(&[0u8; 32]);
    let bytes = f.bytes();
    for len in 0..bytes.len() {
        assert!(Gguf::parse(&bytes[..len]).is_err(), "{len} bytes parsed");
    }
    let cut = &bytes[..bytes.len() - 1];
    assert!(
        err(cut).contains("tensor `t`: its 32 bytes at offset 0 run past the data section's 31 bytes"),
        "{}",
        err(cut)
    );
}

#[test]
fn bad_headers_are_named() {
    assert_eq!(err(b"GGML\x03\0\0\0"), "not a GGUF file: it starts with [47, 47, 4d, 4c], not `GGUF`");
    let mut bytes = File::default().bytes();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(err(&bytes), "GGUF version 1 is not supported (versions 2 and 3 are)");
    bytes[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(err(&bytes).contains("big-endian"));
}

#[test]
fn huge_counts_are_refused_before_allocating() {
    let mut bytes = File::default().bytes();
    bytes[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(err(&bytes).starts_with("the tensor count: a count of 18446744073709551615 cannot fit"), "{}", err(&bytes));
    let mut bytes = File::default().bytes();
    bytes[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(err(&bytes).starts_with("the metadata count"), "{}", err(&bytes));
    // An array claiming 2^60 strings.
    let mut f = File::default();
    string(&mut f.kv, "tokenizer.ggml.tokens");
    f.kv.extend(9u32.to_le_bytes());
    f.kv.extend(8u32.to_le_bytes());
    f.kv.extend((1u64 << 60).to_le_bytes());
    f.kv_count = 1;
    assert!(err(&f.bytes()).starts_with("the array `tokenizer.ggml.tokens`: a count of"), "{}", err(&f.bytes()));
    // A string claiming 2^63 bytes.
    let mut f = File::default().data(&[0u8; 64]);
    f.kv.extend((1u64 << 63).to_le_bytes());
    f.kv_count = 1;
    assert!(err(&f.bytes()).contains("the key of metadata entry 0"), "{}", err(&f.bytes()));
    // Dims whose product overflows.
    let f = File::default().tensor("big", &[1 << 32, 1 << 32, 1 << 32], 0, 0);
    assert_eq!(err(&f.bytes()), "tensor `big`: dims [4294967296, 4294967296, 4294967296]: the element count overflows");
}

#[test]
fn wrong_alignment_is_refused() {
    let f = File::default().kv_u32("general.alignment", 24);
    assert_eq!(Gguf::parse(&f.bytes()).unwrap_err(), GgufError::Alignment(24));
    let f = File::default().kv_u32("general.alignment", 0);
    assert_eq!(Gguf::parse(&f.bytes()).unwrap_err(), GgufError::Alignment(0));
    let f = File::default().tensor("t", &[4], 0, 16).data(&[0u8; 64]);
    assert_eq!(err(&f.bytes()), "tensor `t`: offset 16 is not a multiple of the alignment 32");
}

#[test]
fn unknown_and_unsupported_types_are_named() {
    let f = File::default().tensor("t", &[32], 13, 0).data(&[0u8; 176]);
    assert!(err(&f.bytes()).starts_with("tensor `t`: type Q5_K is not supported (supported: F32, F16"));
    let f = File::default().tensor("t", &[32], 99, 0);
    assert!(err(&f.bytes()).starts_with("tensor `t`: unknown type id 99"));
    let f = File::default().tensor("t", &[33], 8, 0);
    assert!(err(&f.bytes()).contains("the row of 33 is not a whole number of 32-value blocks"), "{}", err(&f.bytes()));
    let f = File::default().tensor("t", &[1, 1, 1, 1, 1], 0, 0);
    assert_eq!(err(&f.bytes()), "tensor `t`: 5 dims: 1 to 4 are allowed");
}

#[test]
fn duplicates_are_refused() {
    let f = File::default().kv_u32("k", 1).kv_u32("k", 2);
    assert_eq!(err(&f.bytes()), "metadata key `k` appears twice");
    let f = File::default().tensor("t", &[8], 0, 0).tensor("t", &[8], 0, 0).data(&[0u8; 32]);
    assert_eq!(err(&f.bytes()), "tensor `t` appears twice");
}

#[test]
fn deeply_nested_arrays_are_refused() {
    let mut f = File::default();
    string(&mut f.kv, "nest");
    f.kv.extend(9u32.to_le_bytes());
    for _ in 0..100 {
        f.kv.extend(9u32.to_le_bytes());
        f.kv.extend(1u64.to_le_bytes());
    }
    f.kv_count = 1;
    assert!(err(&f.bytes()).starts_with("metadata key `nest`: arrays nested deeper than"), "{}", err(&f.bytes()));
}

/// What the Llama mapping does not compute is refused naming the key.
#[test]
fn the_llama_mapping_names_what_it_refuses() {
    let map = |f: File| rlx_gguf::llama_checkpoint(&Gguf::parse(&f.bytes()).unwrap()).unwrap_err().to_string();
    assert_eq!(
        map(File::default().kv_str("general.architecture", "gpt2")),
        "metadata key `general.architecture`: `gpt2` is not supported; supported: llama"
    );
    assert_eq!(map(File::default()), "metadata key `general.architecture`: is missing");
    let llama = || File::default().kv_str("general.architecture", "llama");
    assert_eq!(
        map(llama().kv_u32("llama.expert_count", 8)),
        "metadata key `llama.expert_count`: mixture-of-experts models are not supported"
    );
    assert_eq!(
        map(llama().kv_str("llama.rope.scaling.type", "linear")),
        "metadata key `llama.rope.scaling.type`: \"linear\": rope scaling is not supported"
    );
    assert_eq!(map(llama()), "metadata key `llama.embedding_length`: is missing");
    let sized = llama()
        .kv_u32("llama.embedding_length", 64)
        .kv_u32("llama.attention.head_count", 4)
        .kv_u32("llama.rope.dimension_count", 8);
    assert!(map(sized).starts_with("metadata key `llama.rope.dimension_count`: rotary embeddings over part of a head"));
    let sized = llama().kv_u32("llama.embedding_length", 64).kv_u32("llama.attention.head_count", 0);
    assert_eq!(map(sized), "metadata key `llama.attention.head_count`: must be a positive integer, found UINT32 0");
}

/// Tokenizers the decoder cannot run are refused naming the key.
#[test]
fn only_byte_level_bpe_tokenizers_are_converted() {
    let tok = |f: File| rlx_gguf::tokenizer::tokenizer_json(&Gguf::parse(&f.bytes()).unwrap()).unwrap_err().to_string();
    assert_eq!(
        tok(File::default().kv_str("tokenizer.ggml.model", "llama")),
        "metadata key `tokenizer.ggml.model`: `llama` is not supported: the decoder reads byte-level BPE tokenizers (`gpt2`) only"
    );
    assert_eq!(
        tok(File::default().kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", "llama-bpe")),
        "metadata key `tokenizer.ggml.pre`: pre-tokenizer `llama-bpe` is not supported; supported: gpt-2"
    );
    // GPT-2's regex under llama.cpp's name (what its converter writes and
    // its loader reads) and the older spelling: both pass the pre-tokenizer
    // check and stop at the next key, the missing vocabulary.
    for pre in ["gpt-2", "gpt2"] {
        let f = File::default().kv_str("tokenizer.ggml.model", "gpt2").kv_str("tokenizer.ggml.pre", pre);
        assert_eq!(tok(f), "metadata key `tokenizer.ggml.tokens`: is missing", "{pre}");
    }
}
