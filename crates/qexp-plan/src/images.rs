//! `[workload.images]`: images in every chat request's user message, made
//! in-process (a fixed size or seeded size buckets) or read from files
//! beside the plan; `sweep.image_count` and `sweep.image_size` make them a
//! point parameter. The files are read and checked to be images when the
//! plan loads, so a missing or broken one stops the plan before anything
//! is sent.

use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

use crate::error::Invalid;

/// A width × height, written `"512x384"` in a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSize {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl ImageSize {
    /// `"WxH"` (either case of x), each side 1 to [`qexp_types::image::MAX_SIDE`].
    pub fn parse(text: &str) -> Result<ImageSize, String> {
        let bad = || {
            format!(
                "`{text}` is not a size: write width x height in pixels, e.g. \"512x512\" (each side 1 to {})",
                qexp_types::image::MAX_SIDE
            )
        };
        let (w, h) = text.trim().split_once(['x', 'X']).ok_or_else(bad)?;
        let side = |s: &str| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|v| (1..=qexp_types::image::MAX_SIDE).contains(v))
        };
        match (side(w), side(h)) {
            (Some(width), Some(height)) => Ok(ImageSize { width, height }),
            _ => Err(bad()),
        }
    }

    /// Width × height.
    pub fn pixels(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

impl std::fmt::Display for ImageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// One bucket of `workload.images.sizes`: a size and its weight.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeBucket {
    /// `"WxH"`.
    pub size: Spanned<String>,
    /// Relative weight (default 1).
    #[serde(default = "one")]
    pub weight: Spanned<f64>,
}

fn one() -> Spanned<f64> {
    Spanned::new(0..0, 1.0)
}

/// `[workload.images]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesSection {
    /// Images per request (default 1); `sweep.image_count` overrides it.
    #[serde(default)]
    pub count: Option<Spanned<u32>>,
    /// One size for every generated image, `"WxH"`.
    #[serde(default)]
    pub size: Option<Spanned<String>>,
    /// Sizes drawn per image (seeded), with weights.
    #[serde(default)]
    pub sizes: Option<Spanned<Vec<SizeBucket>>>,
    /// Image files (PNG, JPEG, WebP, GIF) beside the plan, drawn per image
    /// (seeded) instead of generated ones.
    #[serde(default)]
    pub files: Option<Spanned<Vec<Spanned<String>>>>,
    /// The files, read and measured when the plan loads.
    #[serde(skip)]
    pub loaded: Vec<qexp_types::image::Image>,
    /// The buckets, parsed: (size, weight).
    #[serde(skip)]
    pub buckets: Vec<(ImageSize, f64)>,
}

/// Where a plan's images come from, once validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ImageSource<'a> {
    /// Generated at one size.
    Fixed(ImageSize),
    /// Generated, each image's size drawn from weighted buckets.
    Buckets(&'a [(ImageSize, f64)]),
    /// Files, each image drawn from them.
    Files(&'a [qexp_types::image::Image]),
}

impl ImagesSection {
    /// Images per request when the sweep does not say.
    pub fn count(&self) -> u32 {
        self.count.as_ref().map_or(1, |c| *c.get_ref())
    }

    /// Where images come from, the point's swept size first.
    pub fn source(&self, swept: Option<ImageSize>) -> ImageSource<'_> {
        if let Some(s) = swept {
            return ImageSource::Fixed(s);
        }
        if !self.loaded.is_empty() {
            return ImageSource::Files(&self.loaded);
        }
        match self.buckets.as_slice() {
            [(s, _)] => ImageSource::Fixed(*s),
            [] => ImageSource::Fixed(ImageSize {
                width: 512,
                height: 512,
            }),
            many => ImageSource::Buckets(many),
        }
    }

    /// Mean pixels per image at a point of size `swept` (weighted over buckets or files).
    pub fn mean_pixels(&self, swept: Option<ImageSize>) -> f64 {
        match self.source(swept) {
            ImageSource::Fixed(s) => s.pixels() as f64,
            ImageSource::Buckets(b) => {
                let total: f64 = b.iter().map(|(_, w)| w).sum();
                b.iter().map(|(s, w)| s.pixels() as f64 * w).sum::<f64>() / total
            }
            ImageSource::Files(f) => {
                f.iter().map(|i| i.pixels() as f64).sum::<f64>() / f.len().max(1) as f64
            }
        }
    }

    /// Checks the keys and parses sizes; files are read by [`ImagesSection::load`].
    pub(crate) fn validate(&mut self, chat: bool) -> Result<(), Invalid> {
        let key = |k: &str| Some(format!("workload.images.{k}"));
        let span = self.count.as_ref().map(Spanned::span).unwrap_or(0..0);
        if !chat {
            return Err((
                span,
                Some("workload.images".into()),
                "images are sent in chat messages' content parts; set target.api = \"chat\"".into(),
            ));
        }
        let given = [
            self.size.as_ref().map(Spanned::span),
            self.sizes.as_ref().map(Spanned::span),
            self.files.as_ref().map(Spanned::span),
        ];
        if let Some(extra) = given.iter().flatten().nth(1) {
            return Err((
                extra.clone(),
                Some("workload.images".into()),
                "give one of size, sizes and files".into(),
            ));
        }
        if let Some(s) = &self.size {
            let size = ImageSize::parse(s.get_ref()).map_err(|m| (s.span(), key("size"), m))?;
            self.buckets = vec![(size, 1.0)];
        }
        if let Some(list) = &self.sizes {
            if list.get_ref().is_empty() {
                return Err((list.span(), key("sizes"), "give at least one size".into()));
            }
            for b in list.get_ref() {
                let size = ImageSize::parse(b.size.get_ref())
                    .map_err(|m| (b.size.span(), key("sizes"), m))?;
                let w = *b.weight.get_ref();
                if !(w.is_finite() && w > 0.0) {
                    let at = if b.weight.span().is_empty() {
                        b.size.span()
                    } else {
                        b.weight.span()
                    };
                    return Err((
                        at,
                        key("sizes"),
                        "a weight must be a positive number".into(),
                    ));
                }
                self.buckets.push((size, w));
            }
        }
        if let Some(f) = self.files.as_ref().filter(|f| f.get_ref().is_empty()) {
            return Err((
                f.span(),
                key("files"),
                "give at least one image file".into(),
            ));
        }
        Ok(())
    }

    /// Reads and measures the files (relative to `plan_dir`); an error is
    /// the span of the file's name and a sentence.
    pub(crate) fn load(&mut self, plan_dir: &Path) -> Result<(), Invalid> {
        let Some(files) = &self.files else {
            return Ok(());
        };
        for f in files.get_ref() {
            let path = plan_dir.join(f.get_ref());
            let at = |m: String| (f.span(), Some("workload.images.files".into()), m);
            let bytes = std::fs::read(&path)
                .map_err(|e| at(format!("cannot read image {}: {e}", path.display())))?;
            let image = qexp_types::image::from_bytes(&bytes)
                .map_err(|e| at(format!("{} {e}", path.display())))?;
            self.loaded.push(image);
        }
        Ok(())
    }
}

/// The images of a point: how many per request, and at which size when the
/// sweep sets it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PointImages {
    /// Images per request.
    pub count: u32,
    /// The swept size; None when the plan's own size, buckets or files apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<ImageSize>,
    /// Mean pixels per request (count × mean pixels per image): the axis a
    /// report charts time to first token against.
    pub pixels: u64,
}
