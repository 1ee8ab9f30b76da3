//! Images a model can take (PNG, JPEG, GIF, WebP) brought within the limits: downsampled with
//! their aspect kept and re-encoded (the `image` crate does the decoding and encoding).

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader};

/// When an image is downsampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// The longest side, in pixels: 2000.
    pub max_side: u32,
    /// The largest encoding, in bytes: 5 MB.
    pub max_bytes: usize,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_side: 2000,
            max_bytes: 5 * 1024 * 1024,
        }
    }
}

/// An image brought within the limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    /// The new encoding.
    pub bytes: Vec<u8>,
    /// Its MIME type (GIF and WebP become PNG).
    pub mime_type: String,
    /// Its width and height.
    pub size: (u32, u32),
}

/// The smallest side a downsampling goes to before it gives up.
const MIN_SIDE: u32 = 16;

/// `None` when the image of MIME type `mime` is within `limits`; else the image downsampled
/// until it is. An error (in words) for a type models do not take or data that is no image.
pub fn fit_image(bytes: &[u8], mime: &str, limits: &ImageLimits) -> Result<Option<Fitted>, String> {
    let essence = mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase();
    let format = match essence.as_str() {
        "image/png" => ImageFormat::Png,
        "image/jpeg" | "image/jpg" => ImageFormat::Jpeg,
        "image/gif" => ImageFormat::Gif,
        "image/webp" => ImageFormat::WebP,
        _ => return Err(format!("{mime} is not a type models take (PNG, JPEG, GIF, WebP)")),
    };
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|e| format!("the {mime} data is not a readable image: {e}"))?;
    if width.max(height) <= limits.max_side && bytes.len() <= limits.max_bytes {
        return Ok(None);
    }
    let image = ImageReader::with_format(Cursor::new(bytes), format)
        .decode()
        .map_err(|e| format!("the {mime} image cannot be decoded: {e}"))?;
    let mut side = limits.max_side.min(width.max(height)).max(MIN_SIDE);
    loop {
        let resized = if width.max(height) > side {
            image.resize(side, side, FilterType::Triangle)
        } else {
            image.clone()
        };
        let (encoded, mime_type) =
            encode(&resized, format).map_err(|e| format!("re-encoding the image failed: {e}"))?;
        if encoded.len() <= limits.max_bytes {
            return Ok(Some(Fitted {
                bytes: encoded,
                mime_type: mime_type.to_owned(),
                size: (resized.width(), resized.height()),
            }));
        }
        if side <= MIN_SIDE {
            return Err(format!(
                "the image stays above {} bytes even at {side} px",
                limits.max_bytes
            ));
        }
        side = (side * 3 / 4).max(MIN_SIDE);
    }
}

/// JPEG stays JPEG (quality 85); the others become PNG.
fn encode(image: &DynamicImage, format: ImageFormat) -> image::ImageResult<(Vec<u8>, &'static str)> {
    let mut out = Cursor::new(Vec::new());
    if format == ImageFormat::Jpeg {
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85);
        image.to_rgb8().write_with_encoder(encoder)?;
        Ok((out.into_inner(), "image/jpeg"))
    } else {
        image.write_to(&mut out, ImageFormat::Png)?;
        Ok((out.into_inner(), "image/png"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 7]));
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(image)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn a_large_image_is_downsampled_with_its_aspect_and_a_small_one_is_left_alone() {
        let limits = ImageLimits {
            max_side: 100,
            max_bytes: 5 * 1024 * 1024,
        };
        assert_eq!(fit_image(&png(80, 40), "image/png", &limits).unwrap(), None);
        let fitted = fit_image(&png(400, 200), "image/png", &limits).unwrap().unwrap();
        assert_eq!((fitted.size, fitted.mime_type.as_str()), ((100, 50), "image/png"));
        let decoded = image::load_from_memory(&fitted.bytes).unwrap();
        assert_eq!((decoded.width(), decoded.height()), (100, 50));
    }

    #[test]
    fn too_many_bytes_shrink_the_image_until_it_fits() {
        let limits = ImageLimits {
            max_side: 2000,
            max_bytes: 20_000,
        };
        // Noise does not compress: 600 × 600 of it is far above 20 000 bytes.
        let mut seed = 1u32;
        let noise = image::RgbImage::from_fn(600, 600, |_, _| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let [a, b, c, _] = seed.to_le_bytes();
            image::Rgb([a, b, c])
        });
        let mut bytes = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(noise)
            .write_to(&mut bytes, ImageFormat::Png)
            .unwrap();
        let fitted = fit_image(bytes.get_ref(), "image/png", &limits).unwrap().unwrap();
        assert!(fitted.bytes.len() <= 20_000 && fitted.size.0 < 600, "{:?}", fitted.size);
    }

    #[test]
    fn other_types_and_garbage_are_errors_in_words() {
        let limits = ImageLimits::default();
        assert!(
            fit_image(b"<svg/>", "image/svg+xml", &limits)
                .unwrap_err()
                .contains("not a type models take")
        );
        assert!(
            fit_image(b"not a png", "image/png", &limits)
                .unwrap_err()
                .contains("not a readable image")
        );
    }
}
