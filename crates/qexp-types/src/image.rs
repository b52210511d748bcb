//! Images a chat prompt carries: made in-process as seeded PNGs (nothing
//! downloaded), or read from a file or a `data:` URL; each measured as it
//! is sent (width, height, encoded bytes) and sent as a base64 data URL,
//! the form OpenAI-compatible servers take in an `image_url` content part.
//! The simulator reads the same URLs back to charge their patches.

use base64::Engine as _;

/// Largest width or height qexp makes or accepts, pixels.
pub const MAX_SIDE: u32 = 16_384;

/// One image as sent: its data URL and what it measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `data:image/<kind>;base64,<bytes>`.
    pub url: String,
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// The encoded file's size (before base64), bytes.
    pub bytes: u64,
}

impl Image {
    /// Width × height.
    pub fn pixels(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

/// Why bytes or a URL are not an image qexp can send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Not a PNG, JPEG, WebP or GIF (or a truncated one).
    #[error("is not a PNG, JPEG, WebP or GIF image")]
    NotImage,
    /// A `data:` URL that is not base64 image data.
    #[error("is not a base64 data URL of an image (data:image/png;base64,…)")]
    BadDataUrl,
    /// A side of 0 or above [`MAX_SIDE`].
    #[error("is {0}x{1} pixels; each side must be 1 to {MAX_SIDE}")]
    Size(u32, u32),
    /// The PNG encoder failed.
    #[error("could not be encoded as PNG: {0}")]
    Encode(String),
}

/// The MIME type of an image's bytes, with its width and height.
fn sniff(bytes: &[u8]) -> Result<(&'static str, u32, u32), ImageError> {
    use imagesize::ImageType;
    let mime = match imagesize::image_type(bytes).map_err(|_| ImageError::NotImage)? {
        ImageType::Png => "image/png",
        ImageType::Jpeg => "image/jpeg",
        ImageType::Webp => "image/webp",
        ImageType::Gif => "image/gif",
        _ => return Err(ImageError::NotImage),
    };
    let size = imagesize::blob_size(bytes).map_err(|_| ImageError::NotImage)?;
    let side = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let (w, h) = (side(size.width), side(size.height));
    check_size(w, h)?;
    Ok((mime, w, h))
}

fn check_size(width: u32, height: u32) -> Result<(), ImageError> {
    let ok = |s: u32| (1..=MAX_SIDE).contains(&s);
    match ok(width) && ok(height) {
        true => Ok(()),
        false => Err(ImageError::Size(width, height)),
    }
}

/// An image file's bytes as a data URL, measured.
pub fn from_bytes(bytes: &[u8]) -> Result<Image, ImageError> {
    let (mime, width, height) = sniff(bytes)?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(Image {
        url: format!("data:{mime};base64,{b64}"),
        width,
        height,
        bytes: bytes.len() as u64,
    })
}

/// A `data:image/…;base64,` URL, measured (the URL kept as given).
pub fn from_data_url(url: &str) -> Result<Image, ImageError> {
    let payload = url
        .strip_prefix("data:image/")
        .and_then(|rest| rest.split_once(";base64,"))
        .map(|(_, b64)| b64)
        .ok_or(ImageError::BadDataUrl)?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload.trim())
        .map_err(|_| ImageError::BadDataUrl)?;
    let (_, width, height) = sniff(&bytes)?;
    Ok(Image {
        url: url.to_string(),
        width,
        height,
        bytes: bytes.len() as u64,
    })
}

/// A seeded `width` × `height` PNG: 8 × 8 blocks of colour drawn from
/// `seed`, so that no two seeds make the same image (a server's image
/// cache finds nothing) while the file stays small (a few bytes per block:
/// the request's upload is not what is measured). The same seed and size
/// always make the same bytes.
pub fn generate(seed: u64, width: u32, height: u32) -> Result<Image, ImageError> {
    check_size(width, height)?;
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64*: fast, and stable across platforms and versions.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let blocks_x = width.div_ceil(8) as usize;
    let block_colours: Vec<[u8; 3]> = (0..blocks_x * height.div_ceil(8) as usize)
        .map(|_| {
            let c = next().to_le_bytes();
            [c[0], c[1], c[2]]
        })
        .collect();
    let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height as usize {
        for x in 0..width as usize {
            pixels.extend(block_colours[(y / 8) * blocks_x + x / 8]);
        }
    }
    let out = png(width, height, &pixels).map_err(|e| ImageError::Encode(e.to_string()))?;
    from_bytes(&out)
}

/// An 8-bit RGB PNG of `pixels` (rows top to bottom, no filter): the
/// signature, then the IHDR, IDAT (zlib) and IEND chunks, each with its
/// CRC-32 (PNG specification, 3rd edition, sections 5 and 11).
fn png(width: u32, height: u32, pixels: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    let row = width as usize * 3;
    let mut raw = Vec::with_capacity(pixels.len() + height as usize);
    for line in pixels.chunks(row.max(1)) {
        raw.push(0); // filter type: none
        raw.extend_from_slice(line);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(&raw)?;
    let idat = z.finish()?;
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", &ihdr), (b"IDAT", &idat), (b"IEND", &Vec::new())] {
        let len = u32::try_from(data.len())
            .map_err(|_| std::io::Error::other("an image chunk over 4 GiB"))?;
        out.extend(len.to_be_bytes());
        let start = out.len();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        let crc = crc32fast::hash(&out[start..]);
        out.extend(crc.to_be_bytes());
    }
    Ok(out)
}

/// Patches of `patch` × `patch` pixels that cover a `width` × `height`
/// image (partial patches at the edges count whole): the image tokens of a
/// vision encoder that makes one token per patch.
pub fn patches(width: u32, height: u32, patch: u32) -> u64 {
    let p = patch.max(1);
    u64::from(width.div_ceil(p)) * u64::from(height.div_ceil(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_images_are_seeded_pngs_of_their_size() {
        let a = generate(7, 40, 30).unwrap();
        assert_eq!((a.width, a.height, a.pixels()), (40, 30, 1200));
        assert!(
            a.url.starts_with("data:image/png;base64,"),
            "{}",
            &a.url[..30]
        );
        assert_eq!(generate(7, 40, 30).unwrap(), a, "same seed, same bytes");
        assert_ne!(generate(8, 40, 30).unwrap().url, a.url);
        let back = from_data_url(&a.url).unwrap();
        assert_eq!(back, a);
        // 5 × 4 blocks of 3 bytes at least, and far less than the raw pixels.
        assert!(a.bytes > 60 && a.bytes < 40 * 30 * 3, "{} bytes", a.bytes);
        assert_eq!(generate(1, 0, 3), Err(ImageError::Size(0, 3)));
    }

    #[test]
    fn what_is_not_an_image_is_refused() {
        assert_eq!(
            from_bytes(b"hello, not an image"),
            Err(ImageError::NotImage)
        );
        assert_eq!(from_bytes(b""), Err(ImageError::NotImage));
        assert_eq!(
            from_data_url("https://example.com/cat.png"),
            Err(ImageError::BadDataUrl)
        );
        assert_eq!(
            from_data_url("data:image/png;base64,@@@"),
            Err(ImageError::BadDataUrl)
        );
        assert_eq!(
            from_data_url("data:image/png;base64,aGVsbG8="),
            Err(ImageError::NotImage)
        );
    }

    #[test]
    fn patches_cover_the_image() {
        assert_eq!(patches(28, 28, 28), 1);
        assert_eq!(patches(29, 28, 28), 2);
        assert_eq!(patches(448, 448, 14), 32 * 32);
        assert_eq!(patches(1, 1, 0), 1);
    }
}
