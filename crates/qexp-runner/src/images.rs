//! The images each request of a point sends (`[workload.images]`): how
//! many the point says, each made from the plan's seed, the run's salt and
//! the request's place alone (so no two requests or runs share one a
//! server could have cached), at the point's
//! swept size, a size drawn from the plan's buckets, or a file drawn from
//! the plan's files.

use qexp_plan::{ImageSource, ImagesSection, Point};
use qexp_types::image::{self, Image};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// Mixed into the request's key so images never follow the lengths' draws.
const IMAGE_SALT: u64 = 0x696d_6167_6573_2121;

/// Where in a run one request sits: what its images are keyed by.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub seed: u64,
    pub salt: u64,
    pub trial: u32,
    /// The point's place in the sweep (the same for every deployment).
    pub point: u32,
    pub index: u32,
}

impl Place {
    fn key(self) -> u64 {
        let k =
            (u64::from(self.trial) << 48) ^ (u64::from(self.point) << 24) ^ u64::from(self.index);
        self.seed.rotate_left(17) ^ k ^ IMAGE_SALT
    }
}

/// The images of the request at `place` of `point`; none when the point
/// sends none. A generated image that could not be encoded (no size the
/// plan accepts fails) is left out and said in the log: the row records
/// what was sent.
pub(crate) fn for_request(section: &ImagesSection, point: &Point, place: Place) -> Vec<Image> {
    let Some(at) = point.images.filter(|i| i.count > 0) else {
        return Vec::new();
    };
    let mut rng = StdRng::seed_from_u64(place.key());
    let source = section.source(at.size);
    (0..at.count)
        .filter_map(|k| {
            let size = match source {
                ImageSource::Fixed(s) => s,
                ImageSource::Buckets(b) => draw(b, rng.random::<f64>()),
                ImageSource::Files(files) => {
                    return files.get(rng.random_range(0..files.len())).cloned();
                }
            };
            let seed = place.key() ^ place.salt.rotate_left(7) ^ (u64::from(k) << 56);
            image::generate(seed, size.width, size.height)
                .map_err(|e| tracing::error!("an image of {size} was not sent: it {e}"))
                .ok()
        })
        .collect()
}

/// The bucket `u` (uniform in [0, 1)) falls in, by weight.
fn draw(buckets: &[(qexp_plan::ImageSize, f64)], u: f64) -> qexp_plan::ImageSize {
    let total: f64 = buckets.iter().map(|(_, w)| w).sum();
    let mut left = u * total;
    for (size, w) in buckets {
        if left < *w {
            return *size;
        }
        left -= w;
    }
    // Rounding at the top end: the last bucket. Validation leaves at least one.
    buckets.last().map_or(
        qexp_plan::ImageSize {
            width: 512,
            height: 512,
        },
        |b| b.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use qexp_plan::{ImageSize, PointImages};

    fn size(width: u32, height: u32) -> ImageSize {
        ImageSize { width, height }
    }

    #[test]
    fn buckets_are_drawn_by_weight() {
        let b = [(size(1, 1), 1.0), (size(2, 2), 3.0)];
        assert_eq!(draw(&b, 0.0), size(1, 1));
        assert_eq!(draw(&b, 0.24), size(1, 1));
        assert_eq!(draw(&b, 0.26), size(2, 2));
        assert_eq!(draw(&b, 0.999_999), size(2, 2));
    }

    #[test]
    fn a_request_gets_the_points_images_seeded_by_its_place() {
        let section: ImagesSection = toml::from_str("size = \"32x16\"").unwrap();
        let mut section = section;
        section.buckets = vec![(size(32, 16), 1.0)];
        let point = Point {
            images: Some(PointImages {
                count: 2,
                size: None,
                pixels: 1024,
            }),
            ..Point::default()
        };
        let place = Place {
            seed: 1,
            salt: 2,
            trial: 1,
            point: 0,
            index: 3,
        };
        let a = for_request(&section, &point, place);
        assert_eq!(a.len(), 2);
        assert!(a.iter().all(|i| (i.width, i.height) == (32, 16)));
        assert_ne!(a[0].url, a[1].url, "each image of a request is its own");
        assert_eq!(for_request(&section, &point, place), a, "seeded");
        let next = Place { index: 4, ..place };
        assert_ne!(for_request(&section, &point, next)[0].url, a[0].url);
        let other_run = Place { salt: 3, ..place };
        assert_ne!(for_request(&section, &point, other_run)[0].url, a[0].url);
        let none = Point::default();
        assert!(for_request(&section, &none, place).is_empty());
    }
}
