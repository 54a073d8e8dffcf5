//! The bundled byte-level BPE tokenizer: Rust ids equal the Python
//! `tokenizers` ids, and streamed decoding equals whole decoding.

mod common;

use rlx_decode::{TextStream, Tokenizer};

fn tokenizer() -> Tokenizer {
    Tokenizer::from_bytes(common::TOKENIZER_JSON).expect("loads")
}

/// `(text, ids)` from the fixture models/make/make_tokenizer.py writes.
fn cases() -> Vec<(String, Vec<u32>)> {
    let v: serde_json::Value = serde_json::from_str(common::TOKENIZER_CASES).expect("fixture parses");
    v["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let ids = c["ids"].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect();
            (c["text"].as_str().unwrap().to_owned(), ids)
        })
        .collect()
}

#[test]
fn the_vocabulary_and_end_of_text_are_found() {
    let t = tokenizer();
    assert_eq!(t.vocab(), 512);
    assert_eq!(t.end_of_text(), Some(0));
    assert_eq!(t.token_bytes(0).unwrap(), b"", "special tokens decode to no text");
    assert!(t.token_bytes(512).is_err());
}

#[test]
fn encode_matches_python_tokenizers() {
    let t = tokenizer();
    let cases = cases();
    assert!(cases.len() >= 8);
    for (text, ids) in cases {
        assert_eq!(t.encode(&text).unwrap(), ids, "{text:?}");
    }
}

/// Streams `ids` one token at a time; returns the pieces (the last one from
/// `finish`).
fn stream(t: &Tokenizer, ids: &[u32]) -> Vec<String> {
    let mut s = TextStream::new();
    let mut pieces: Vec<String> = ids.iter().map(|&id| s.push(t, id).unwrap().to_owned()).collect();
    pieces.push(s.finish().to_owned());
    pieces
}

#[test]
fn streamed_text_is_the_decoded_text_and_round_trips() {
    let t = tokenizer();
    for (text, ids) in cases() {
        let pieces = stream(&t, &ids);
        // Special tokens vanish from decoded text.
        let want = text.replace("<|endoftext|>", "");
        assert_eq!(pieces.concat(), want, "{text:?}");
        assert_eq!(t.decode(&ids).unwrap(), want);
        assert_eq!(t.inner().decode(&ids, true).unwrap(), want, "tokenizers' own decoder agrees");
    }
}

#[test]
fn a_character_split_across_tokens_is_held_until_complete() {
    let t = tokenizer();
    let ids = t.encode("🦀").unwrap();
    assert!(ids.len() > 1, "the crab is several byte tokens: {ids:?}");
    let pieces = stream(&t, &ids);
    // Nothing comes out until the last byte of the character arrives.
    assert!(pieces[..ids.len() - 1].iter().all(String::is_empty), "{pieces:?}");
    assert_eq!(pieces[ids.len() - 1], "🦀");
}

#[test]
fn bytes_that_never_form_text_become_replacement_characters() {
    let t = tokenizer();
    // Byte tokens: two of the four bytes of a character then a letter, a
    // lone continuation byte then a letter, and a character cut off at the
    // end.
    let byte = |b: u8| -> u32 {
        (0..t.vocab() as u32).find(|&id| t.token_bytes(id).unwrap() == [b]).expect("every byte has a token")
    };
    let crab = "🦀".as_bytes();
    let ids: Vec<u32> =
        [crab[0], crab[1], b'a', 0x80, b'b', crab[0], crab[1], crab[2]].iter().map(|&b| byte(b)).collect();
    let pieces = stream(&t, &ids);
    let mut all = Vec::new();
    for &id in &ids {
        all.extend_from_slice(t.token_bytes(id).unwrap());
    }
    assert_eq!(pieces.concat(), String::from_utf8_lossy(&all));
    assert_eq!(pieces.concat(), "\u{FFFD}a\u{FFFD}b\u{FFFD}");
    assert_eq!(pieces.last().unwrap(), "\u{FFFD}", "a character cut at the end is flushed by finish");
}

#[test]
fn a_tokenizer_that_is_not_byte_level_is_refused() {
    let json = String::from_utf8(common::TOKENIZER_JSON.to_vec()).unwrap();
    let json = json.replace(
        r#""decoder": {"add_prefix_space": true, "trim_offsets": true, "type": "ByteLevel", "use_regex": true}"#,
        r#""decoder": {"type": "Fuse"}"#,
    );
    assert!(json.contains("Fuse"), "the fixture's decoder text changed");
    let e = Tokenizer::from_bytes(json.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the tokenizer's decoder is Fuse, not ByteLevel: only byte-level BPE tokenizers are supported"
    );
    let e = Tokenizer::from_bytes(b"{").unwrap_err();
    assert!(e.to_string().starts_with("cannot load tokenizer.json: "), "{e}");
}

/// Two tokens with one id would make decoding that id ambiguous: refused,
/// naming both.
#[test]
fn a_vocabulary_with_a_duplicate_id_is_refused() {
    let json: serde_json::Value = serde_json::from_slice(common::TOKENIZER_JSON).unwrap();
    let vocab = json.pointer("/model/vocab").and_then(|v| v.as_object()).expect("a BPE vocabulary");
    let (first, id) = vocab.iter().find(|(_, id)| id.as_u64() == Some(300)).expect("id 300");
    let (second, _) = vocab.iter().find(|(_, id)| id.as_u64() == Some(301)).expect("id 301");
    let mut edited = json.clone();
    edited["model"]["vocab"][second.as_str()] = id.clone();
    let e = Tokenizer::from_bytes(&serde_json::to_vec(&edited).unwrap()).unwrap_err().to_string();
    let (a, b) = if first < second { (first, second) } else { (second, first) };
    assert_eq!(e, format!("cannot load tokenizer.json: tokens `{a}` and `{b}` both have id 300"));
}

/// A file cut inside its `decoder` object made `tokenizers` panic (its
/// decoder deserialiser `expect`s well-formed JSON): it is a load error.
#[test]
fn a_file_cut_inside_the_decoder_is_a_load_error() {
    let json = common::TOKENIZER_JSON;
    let at = json.windows(13).position(|w| w == br#""decoder": {""#).expect("the fixture has a decoder") + 15;
    for end in [at, at + 1, at + 2] {
        let e = Tokenizer::from_bytes(&json[..end]).unwrap_err();
        assert!(e.to_string().starts_with("cannot load tokenizer.json: EOF while parsing"), "{e}");
    }
}

/// The fixture with token `H` (id 40) moved to `id`, leaving a hole at 40.
fn with_h_at(id: u64) -> Vec<u8> {
    let mut json: serde_json::Value = serde_json::from_slice(common::TOKENIZER_JSON).unwrap();
    assert_eq!(json["model"]["vocab"]["H"], 40, "the fixture's vocabulary changed");
    json["model"]["vocab"]["H"] = id.into();
    serde_json::to_vec(&json).unwrap()
}

/// Ids that leave holes span to the largest: every id the tokenizer
/// encodes decodes (the vocabulary was the token count, 512, and `H`
/// encoded as an id past it that did not decode).
#[test]
fn a_vocabulary_with_holes_spans_to_its_largest_id() {
    let t = Tokenizer::from_bytes(&with_h_at(600)).unwrap();
    assert_eq!(t.vocab(), 601);
    let ids = t.encode("Hi").unwrap();
    assert_eq!(ids[0], 600);
    assert_eq!(t.decode(&ids).unwrap(), "Hi");
    assert_eq!(t.token_bytes(40).unwrap(), b"", "a hole decodes to nothing");
    assert!(t.token_bytes(601).is_err());
}

#[test]
fn an_id_beyond_the_largest_vocabulary_is_refused() {
    let limit = rlx_decode::tokenizer::MAX_VOCAB as u64;
    let e = Tokenizer::from_bytes(&with_h_at(limit)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("cannot load tokenizer.json: token id {limit} is beyond the {limit} ids a vocabulary may span")
    );
    assert_eq!(Tokenizer::from_bytes(&with_h_at(limit - 1)).unwrap().vocab(), limit as usize);
}

/// A merge whose joined token is not in the vocabulary, and longer than
/// every token there, made `tokenizers` index past its merge buffer (a
/// panic); one whose second part lacks the continuing-subword prefix
/// would underflow. Both are refused, naming the merge.
#[test]
fn a_merge_outside_the_vocabulary_is_refused() {
    let json: serde_json::Value = serde_json::from_slice(common::TOKENIZER_JSON).unwrap();
    let mut longest_gone = json.clone();
    let vocab = longest_gone["model"]["vocab"].as_object_mut().unwrap();
    assert!(vocab.remove("ĊĠĠĠĠĠĠĠĠ").is_some(), "the fixture's longest token changed");
    let e = Tokenizer::from_bytes(&serde_json::to_vec(&longest_gone).unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot load tokenizer.json: merge 125 (`Ċ` `ĠĠĠĠĠĠĠĠ`): the merged token `ĊĠĠĠĠĠĠĠĠ` is not in the vocabulary"
    );
    let mut prefixed = json;
    prefixed["model"]["continuing_subword_prefix"] = "##".into();
    let e = Tokenizer::from_bytes(&serde_json::to_vec(&prefixed).unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "cannot load tokenizer.json: merge 0 (`Ġ` `Ġ`): `Ġ` does not start with the continuing-subword prefix `##`"
    );
}
