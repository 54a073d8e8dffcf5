//! Every tensor type read through the container and dequantized equals
//! the `gguf` Python package's `gguf.quants.dequantize` bit for bit
//! (`tests/data/quants.gguf`, written by `models/make/make_gguf.py`: each
//! tensor `NAME` beside its reference `NAME.expected`).

use std::path::Path;

use rlx_gguf::{GgmlType, Gguf};

fn fixture() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/quants.gguf")).unwrap()
}

#[test]
fn every_type_dequantizes_as_gguf_python_does() {
    let bytes = fixture();
    let gguf = Gguf::parse(&bytes).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for t in gguf.tensors().iter().filter(|t| !t.name.ends_with(".expected")) {
        let want = gguf.tensor(&format!("{}.expected", t.name)).unwrap();
        assert_eq!(want.ty, GgmlType::F32);
        assert_eq!(want.dims, t.dims, "{}", t.name);
        let (got, want) = (gguf.dequantize(t), gguf.dequantize(want));
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "{} value {i}: {g} vs gguf-python's {w}", t.name);
        }
        seen.insert(t.ty.name());
    }
    let all: std::collections::BTreeSet<_> = GgmlType::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(seen, all, "the fixture covers every type");
}

#[test]
fn the_raw_blocks_stay_reachable() {
    use rlx_gguf::quants::{Block, BlockQ6K};
    let bytes = fixture();
    let gguf = Gguf::parse(&bytes).unwrap();
    let t = gguf.tensor("q6_k.random").unwrap();
    let raw = gguf.raw(t);
    assert_eq!(raw.len(), t.bytes);
    assert_eq!(raw.len() % BlockQ6K::BYTES, 0);
    let mut first = [0.0f32; 256];
    BlockQ6K::read(&raw[..BlockQ6K::BYTES]).dequantize(&mut first);
    assert_eq!(&gguf.dequantize(t)[..256], &first[..]);
}
