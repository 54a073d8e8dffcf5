//! `models/llama_tiny` converted by llama.cpp's `convert_hf_to_gguf.py`
//! (`models/llama_tiny/gguf/`, `models/make/make_gguf.py`) imports as
//! its Hugging Face checkpoint does.

use std::path::{Path, PathBuf};

use rlx_gguf::{llama_checkpoint, Gguf};
use rlx_onnx::llama::{import_llama_with, LlamaOptions, WeightFormat};
use sha2::{Digest, Sha256};

fn model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/llama_tiny")
}

fn gguf_file(kind: &str) -> Vec<u8> {
    std::fs::read(model_dir().join(format!("gguf/llama_tiny.{kind}.gguf"))).unwrap()
}

fn hf() -> (String, Vec<u8>) {
    let dir = model_dir().join("hf");
    (std::fs::read_to_string(dir.join("config.json")).unwrap(), std::fs::read(dir.join("model.safetensors")).unwrap())
}

fn options(weights: WeightFormat) -> LlamaOptions {
    LlamaOptions { prefill: 16, weights, max_len: None }
}

fn import(config: &str, tensors: &[u8], weights: WeightFormat) -> rlx_onnx::Imported {
    import_llama_with(config, tensors, &options(weights), "llama_tiny", "weights.safetensors").unwrap()
}

/// The f32 GGUF imports to the HF checkpoint's schedule and weights, bit
/// for bit: the metadata maps to the same config and the query and key
/// rows are unpermuted exactly.
#[test]
fn the_f32_gguf_imports_as_the_checkpoint_does() {
    let bytes = gguf_file("f32");
    let hf_of_gguf = llama_checkpoint(&Gguf::parse(&bytes).unwrap()).unwrap();
    let (config, tensors) = hf();
    for format in [WeightFormat::AsStored, WeightFormat::F16] {
        let from_gguf = import(&hf_of_gguf.config_json, &hf_of_gguf.safetensors, format);
        let from_hf = import(&config, &tensors, format);
        assert_eq!(from_gguf.sched_text, from_hf.sched_text, "{format:?}");
        assert!(from_gguf.weights == from_hf.weights, "{format:?}: the weights differ");
    }
}

/// The checkpoint with every matrix rounded to f16 (the norms stay f32),
/// which is what `convert_hf_to_gguf.py --outtype f16` writes.
fn hf_rounded_to_f16() -> Vec<u8> {
    let (_, tensors) = hf();
    let st = safetensors::SafeTensors::deserialize(&tensors).unwrap();
    let mut owned: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in st.tensors() {
        let values: Vec<f32> = view.data().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        let shape = view.shape().to_vec();
        let (dtype, data) = if shape.len() == 2 {
            (safetensors::Dtype::F16, values.iter().flat_map(|&x| half::f16::from_f32(x).to_le_bytes()).collect())
        } else {
            (safetensors::Dtype::F32, view.data().to_vec())
        };
        owned.push((name, dtype, shape, data));
    }
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = owned
        .iter()
        .map(|(n, d, s, b)| (n.clone(), safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap()))
        .collect();
    safetensors::serialize(views, &None).unwrap()
}

/// The f16 GGUF imports as the f16-rounded checkpoint does (2-byte
/// product weights, as an f16 checkpoint gets), bit for bit.
#[test]
fn the_f16_gguf_imports_as_the_f16_checkpoint_does() {
    let bytes = gguf_file("f16");
    let hf_of_gguf = llama_checkpoint(&Gguf::parse(&bytes).unwrap()).unwrap();
    let (config, _) = hf();
    let from_gguf = import(&hf_of_gguf.config_json, &hf_of_gguf.safetensors, WeightFormat::AsStored);
    let from_hf = import(&config, &hf_rounded_to_f16(), WeightFormat::AsStored);
    assert!(from_gguf.sched_text.contains("PackedGemmHalf"));
    assert_eq!(from_gguf.sched_text, from_hf.sched_text);
    assert!(from_gguf.weights == from_hf.weights, "the weights differ");
}

/// Every tensor of every model GGUF dequantizes to what the `gguf`
/// package's `gguf.quants.dequantize` gives (sha256 of the f32 bytes,
/// `llama_tiny.TYPE.sha256.json`).
#[test]
fn every_tensor_dequantizes_as_gguf_python_does() {
    for kind in ["f32", "f16", "q8_0"] {
        let bytes = gguf_file(kind);
        let gguf = Gguf::parse(&bytes).unwrap();
        let hashes = std::fs::read_to_string(model_dir().join(format!("gguf/llama_tiny.{kind}.sha256.json"))).unwrap();
        let hashes: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&hashes).unwrap();
        assert_eq!(hashes.len(), gguf.tensors().len());
        for t in gguf.tensors() {
            let values: Vec<u8> = gguf.dequantize(t).iter().flat_map(|x| x.to_le_bytes()).collect();
            let got = format!("{:x}", Sha256::digest(&values));
            assert_eq!(Some(got.as_str()), hashes[&t.name].as_str(), "{kind}: tensor `{}` ({})", t.name, t.ty);
        }
        if kind == "q8_0" {
            assert!(gguf.tensors().iter().any(|t| t.ty == rlx_gguf::GgmlType::Q8_0));
        }
    }
}

/// Every Q8_0 block of the Q8_0 GGUF quantizes back to itself with
/// ggml's reference rounding (`rlx_onnx::quantize::quantize_block`) from the
/// values it dequantizes to: the scale's f16 bits and every `q`. So an
/// import that quantizes the mapped f32 values to Q8_0 (what `--weights
/// stored` does for such a file) holds the file's blocks, re-laid out.
#[test]
fn the_q8_0_gguf_blocks_quantize_back_to_themselves() {
    let bytes = gguf_file("q8_0");
    let gguf = Gguf::parse(&bytes).unwrap();
    let mut blocks = 0;
    for t in gguf.tensors().iter().filter(|t| t.ty == rlx_gguf::GgmlType::Q8_0) {
        let raw = gguf.raw(t);
        let values = gguf.dequantize(t);
        for (block, x) in raw.chunks_exact(34).zip(values.chunks_exact(32)) {
            let (d, q) = rlx_onnx::quantize::quantize_block(x.try_into().unwrap());
            assert_eq!(half::f16::from_f32(d).to_bits(), u16::from_le_bytes([block[0], block[1]]), "{}: scale", t.name);
            let stored: Vec<i8> = block[2..].iter().map(|&b| b as i8).collect();
            assert_eq!(q.to_vec(), stored, "{}: values", t.name);
            blocks += 1;
        }
    }
    // 2 layers of q, k, v, o, gate, up, and the embedding table.
    assert_eq!(blocks, 2 * (64 * 64 * 2 + 64 * 32 * 2 + 64 * 172 * 2) / 32 + 512 * 64 / 32);
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The Q8_0 GGUF's import, with f32 products (`--weights f32`) and kept
/// 8-bit (`--weights q8_0`, what `--weights stored` picks for such a
/// file): its 64 greedy tokens (through the `prefill` entry and decode
/// steps, run by the interpreter) are transformers' with the same
/// dequantized weights (`llama_tiny.q8_0.{tokens,logits}.npy`,
/// `models/make/make_gguf.py`), every logit within 1e-4 of its. Against
/// the f32 model: the first 18 tokens agree, then 8-bit weights pick
/// another token and the texts part (transformers parts there too); the
/// logits' distance over those first steps is printed (`docs/decoding.md`,
/// "GGUF").
#[test]
fn the_q8_0_gguf_generates_transformers_tokens_for_its_weights() {
    let bytes = gguf_file("q8_0");
    let hf_of_gguf = llama_checkpoint(&Gguf::parse(&bytes).unwrap()).unwrap();
    for format in [WeightFormat::F32, WeightFormat::Q8_0] {
        let imported = import(&hf_of_gguf.config_json, &hf_of_gguf.safetensors, format);
        assert_eq!(imported.sched_text.contains("PackedGemmQ8"), format == WeightFormat::Q8_0);
        q8_0_import_generates_transformers_tokens(&imported, &format!("{format:?}"));
    }
}

fn q8_0_import_generates_transformers_tokens(imported: &rlx_onnx::Imported, what: &str) {
    let npy = |path: PathBuf| rlx_runtime::npy::read_npy(&path).unwrap();
    let expected = |name: &str| npy(model_dir().join("expected").join(name));
    let prompt = i64s(&expected("prompt_ids.npy").bytes);
    let f32_tokens = i64s(&expected("tokens.npy").bytes);
    let f32_logits = f32s(&expected("logits.npy").bytes);
    let tokens = i64s(&npy(model_dir().join("gguf/llama_tiny.q8_0.tokens.npy")).bytes);
    let want_logits = f32s(&npy(model_dir().join("gguf/llama_tiny.q8_0.logits.npy")).bytes);
    let vocab = expected("logits.npy").shape[1];
    let same_as_f32 = tokens.iter().zip(&f32_tokens).take_while(|(a, b)| a == b).count();
    assert_eq!(same_as_f32, 18, "the reference's agreement with the f32 model");
    let dir = std::env::temp_dir().join(format!("rlx-gguf-q8-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("weights.safetensors"), &imported.weights).unwrap();
    std::fs::write(dir.join("model.sched"), &imported.sched_text).unwrap();
    let s = rlx_sched::load(&dir.join("model.sched")).unwrap().schedule;
    let file = std::fs::read(dir.join("weights.safetensors")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let data_offset = s.weights().unwrap().data_offset;
    let mut interp = rlx_interp::Interpreter::new(s, &file[data_offset..]).unwrap();
    let prefill = interp.entry("prefill").unwrap();
    let mut chunk = [0i64; 16];
    chunk[..prompt.len()].copy_from_slice(&prompt);
    interp.set_bytes("prefill.tokens", &chunk.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    interp.set_bytes("pos", &0i64.to_le_bytes()).unwrap();
    interp.run_entry(prefill);
    let rows = f32s(interp.bytes("prefill.logits").unwrap());
    let mut row = rows[(prompt.len() - 1) * vocab..prompt.len() * vocab].to_vec();
    let argmax = |row: &[f32]| (0..row.len()).fold(0, |best, i| if row[i] > row[best] { i } else { best }) as i64;
    let (mut worst, mut from_f32) = (0.0f32, 0.0f32);
    for (i, &want) in tokens.iter().enumerate() {
        let range = i * vocab..(i + 1) * vocab;
        for (g, w) in row.iter().zip(&want_logits[range.clone()]) {
            worst = worst.max((g - w).abs());
        }
        if i < same_as_f32 {
            for (g, f) in row.iter().zip(&f32_logits[range]) {
                from_f32 = from_f32.max((g - f).abs());
            }
        }
        let got = argmax(&row);
        assert_eq!(got, want, "{what}: token {i}");
        interp.set_bytes("tokens", &got.to_le_bytes()).unwrap();
        interp.set_bytes("pos", &((prompt.len() + i) as i64).to_le_bytes()).unwrap();
        interp.run();
        row = f32s(interp.bytes("logits").unwrap());
    }
    let step = &f32_logits[same_as_f32 * vocab..(same_as_f32 + 1) * vocab];
    let margin = step[f32_tokens[same_as_f32] as usize] - step[tokens[same_as_f32] as usize];
    eprintln!(
        "Q8_0 GGUF, {what} weights: worst logit error {worst:e} vs transformers with the same weights; {from_f32:e} vs the f32 model over \
         the {same_as_f32} shared steps; at step {same_as_f32} the f32 model prefers token {} to the Q8_0 model's {} by {margin:e}",
        f32_tokens[same_as_f32], tokens[same_as_f32]
    );
    assert!(worst <= 1e-4, "{what}: worst logit error {worst} against transformers with the same weights");
}

/// The GGUF's tokenizer becomes a `tokenizer.json` that encodes and
/// decodes as the checkpoint's own does, and the generation config
/// (end-of-reply ids, chat template) is the checkpoint's.
#[test]
fn the_tokenizer_and_generation_config_are_the_checkpoints() {
    let bytes = gguf_file("q8_0");
    let gguf = Gguf::parse(&bytes).unwrap();
    let json = rlx_gguf::tokenizer::tokenizer_json(&gguf).unwrap();
    let ours = rlx_decode::Tokenizer::from_bytes(&json).unwrap();
    let theirs =
        rlx_decode::Tokenizer::from_bytes(&std::fs::read(model_dir().join("tokenizer.json")).unwrap()).unwrap();
    assert_eq!(ours.vocab(), theirs.vocab());
    assert_eq!(ours.end_of_text(), theirs.end_of_text());
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model_dir().join("tokenizer_cases.json")).unwrap()).unwrap();
    for case in cases["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
        assert_eq!(ours.encode(text).unwrap(), want, "{text:?}");
        assert_eq!(ours.decode(&want).unwrap(), theirs.decode(&want).unwrap());
    }
    let checkpoint = llama_checkpoint(&gguf).unwrap();
    let config = rlx_gguf::tokenizer::tokenizer_config_json(&gguf).unwrap();
    let generation =
        rlx_decode::GenerationConfig::from_checkpoint(&checkpoint.config_json, None, Some(&config)).unwrap();
    let checked_in = std::fs::read_to_string(model_dir().join("generation.json")).unwrap();
    assert_eq!(generation.to_json(), checked_in);
}

/// The fuzz seeds `tests/data/llama_micro{,_untied}.gguf` (one layer;
/// F32, F16, BF16, Q8_0, Q4_0 and Q4_1 tensors; tied and untied logits)
/// import, tokenizer and all: their mutants reach the importer.
#[test]
fn the_micro_llama_seeds_import() {
    for file in ["llama_micro.gguf", "llama_micro_untied.gguf"] {
        let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file)).unwrap();
        let gguf = Gguf::parse(&bytes).unwrap();
        let hf = llama_checkpoint(&gguf).unwrap();
        let imported = import(&hf.config_json, &hf.safetensors, WeightFormat::AsStored);
        assert!(imported.sched_text.contains("CachedAttention"), "{file}");
        assert_eq!(imported.sched_text.contains("lm_head"), file.contains("untied"), "{file}");
        let json = rlx_gguf::tokenizer::tokenizer_json(&gguf).unwrap();
        let tokenizer = rlx_decode::Tokenizer::from_bytes(&json).unwrap();
        assert_eq!(tokenizer.encode("ab").unwrap(), [15], "{file}");
    }
}
