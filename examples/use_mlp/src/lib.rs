//! A digit classifier over the bundled `mlp` model, written as a user's
//! application would use a model crate: `Model::new`, the typed input and
//! output accessors, `run`.

use mlp::{GeneratedModel, Model};

/// The pixels of one 8x8 digit, row-major, as the model takes them.
pub type Image = [f32; 64];

/// A digit and the model's probability for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub digit: usize,
    pub probability: f32,
}

/// Owns one model instance (its own arena; the weights are shared by all).
pub struct Classifier {
    model: Model,
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier {
    pub fn new() -> Self {
        Classifier { model: Model::new() }
    }

    /// The ten digits' probabilities for `image`.
    pub fn probabilities(&mut self, image: &Image) -> [f32; 10] {
        *self.model.input_x() = *image;
        self.model.run();
        *self.model.output_probs()
    }

    /// The most probable digit.
    pub fn classify(&mut self, image: &Image) -> Prediction {
        let probs = self.probabilities(image);
        let (digit, probability) =
            probs.iter().copied().enumerate().max_by(|a, b| a.1.total_cmp(&b.1)).expect("ten probabilities");
        Prediction { digit, probability }
    }
}
