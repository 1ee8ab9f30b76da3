//! Images a model can take (PNG, JPEG, GIF, WebP) brought within the limits: downsampled with
//! their aspect kept and re-encoded (the `image` crate does the decoding and encoding).

use std::io::Cursor;
use std::sync::{Condvar, Mutex, PoisonError};

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader};

/// When an image is downsampled, and the most one may cost to do so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// The longest side, in pixels: 2000.
    pub max_side: u32,
    /// The largest encoding, in bytes: 5 MB.
    pub max_bytes: usize,
    /// The most pixels an image may declare to be decoded at all: 24 million (96 MB as RGBA).
    /// A larger one (a small file can declare 11 000 × 11 000) is saved to a file instead,
    /// without being decoded.
    pub max_pixels: u64,
    /// The most memory the decoder may allocate for one image: 128 MiB.
    pub max_decode_bytes: u64,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_side: 2000,
            max_bytes: 5 * 1024 * 1024,
            max_pixels: 24_000_000,
            max_decode_bytes: 128 * 1024 * 1024,
        }
    }
}

/// How many images are decoded and resized at once in this process (each may take a few
/// hundred MB at the limits above): the others wait their turn.
const MAX_CONCURRENT_IMAGES: usize = 2;

/// The images being decoded now, and the signal that one is done.
static DECODING: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// A turn to decode an image, given back when dropped.
struct Turn;

impl Turn {
    /// Waits (this thread: image work runs on a blocking thread) until fewer than
    /// [`MAX_CONCURRENT_IMAGES`] images are being decoded.
    fn wait() -> Turn {
        let (count, done) = &DECODING;
        let mut active = count.lock().unwrap_or_else(PoisonError::into_inner);
        while *active >= MAX_CONCURRENT_IMAGES {
            active = done.wait(active).unwrap_or_else(PoisonError::into_inner);
        }
        *active += 1;
        Turn
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let (count, done) = &DECODING;
        *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        done.notify_one();
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

/// Why an image could not be fitted within its limits.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// Its MIME type is not one models take.
    #[error("{mime} is not a type models take (PNG, JPEG, GIF, WebP)")]
    Unsupported {
        /// The MIME type.
        mime: String,
    },
    /// Its header cannot be read.
    #[error("the {mime} data is not a readable image")]
    Unreadable {
        /// The MIME type.
        mime: String,
        /// Why.
        #[source]
        source: image::ImageError,
    },
    /// It has more pixels than are decoded to resize one.
    #[error("the image is {width} × {height} pixels, more than the {max} that are decoded to resize one")]
    TooManyPixels {
        /// Its width.
        width: u32,
        /// Its height.
        height: u32,
        /// The most pixels decoded ([`ImageLimits::max_pixels`]).
        max: u64,
    },
    /// Its data cannot be decoded.
    #[error("the {mime} image cannot be decoded")]
    Undecodable {
        /// The MIME type.
        mime: String,
        /// Why.
        #[source]
        source: image::ImageError,
    },
    /// Encoding the smaller image failed.
    #[error("re-encoding the image failed")]
    Encode(#[source] image::ImageError),
    /// Even the smallest size tried is over the byte limit.
    #[error("the image stays above {max_bytes} bytes even at {side} px")]
    StaysTooLarge {
        /// The byte limit.
        max_bytes: usize,
        /// The smallest side tried.
        side: u32,
    },
}

/// `None` when the image of MIME type `mime` is within `limits`; else the image downsampled
/// until it is. An error for a type models do not take or data that is no image.
pub fn fit_image(bytes: &[u8], mime: &str, limits: &ImageLimits) -> Result<Option<Fitted>, ImageError> {
    let essence = mime.split(';').next().unwrap_or(mime).trim().to_ascii_lowercase();
    let format = match essence.as_str() {
        "image/png" => ImageFormat::Png,
        "image/jpeg" | "image/jpg" => ImageFormat::Jpeg,
        "image/gif" => ImageFormat::Gif,
        "image/webp" => ImageFormat::WebP,
        _ => return Err(ImageError::Unsupported { mime: mime.to_owned() }),
    };
    let mut header = ImageReader::with_format(Cursor::new(bytes), format);
    header.limits(decoder_limits(limits, None));
    let (width, height) = header.into_dimensions().map_err(|source| ImageError::Unreadable {
        mime: mime.to_owned(),
        source,
    })?;
    if width.max(height) <= limits.max_side && bytes.len() <= limits.max_bytes {
        return Ok(None);
    }
    if u64::from(width) * u64::from(height) > limits.max_pixels {
        return Err(ImageError::TooManyPixels {
            width,
            height,
            max: limits.max_pixels,
        });
    }
    let _turn = Turn::wait();
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(decoder_limits(limits, Some((width, height))));
    let image = reader.decode().map_err(|source| ImageError::Undecodable {
        mime: mime.to_owned(),
        source,
    })?;
    let mut side = limits.max_side.min(width.max(height)).max(MIN_SIDE);
    loop {
        let resized = if width.max(height) > side {
            image.resize(side, side, FilterType::Triangle)
        } else {
            image.clone()
        };
        let (encoded, mime_type) = encode(&resized, format).map_err(ImageError::Encode)?;
        if encoded.len() <= limits.max_bytes {
            return Ok(Some(Fitted {
                bytes: encoded,
                mime_type: mime_type.to_owned(),
                size: (resized.width(), resized.height()),
            }));
        }
        if side <= MIN_SIDE {
            return Err(ImageError::StaysTooLarge {
                max_bytes: limits.max_bytes,
                side,
            });
        }
        side = (side * 3 / 4).max(MIN_SIDE);
    }
}

/// The decoder's own limits, set on every reader of an image: at most
/// [`ImageLimits::max_decode_bytes`] allocated, and, once the header was read, no side larger
/// than it declared (`size`). A decompression bomb is refused by these, before its memory is
/// allocated.
fn decoder_limits(limits: &ImageLimits, size: Option<(u32, u32)>) -> image::Limits {
    let mut decoder = image::Limits::default();
    decoder.max_alloc = Some(limits.max_decode_bytes);
    if let Some((width, height)) = size {
        decoder.max_image_width = Some(width);
        decoder.max_image_height = Some(height);
    }
    decoder
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
            ..ImageLimits::default()
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
            max_bytes: 20_000,
            ..ImageLimits::default()
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
    fn an_image_that_declares_too_many_pixels_is_not_decoded() {
        // A 4 096 × 4 096 PNG of one colour compresses to a few kilobytes.
        let big = {
            let image = image::GrayImage::from_pixel(4096, 4096, image::Luma([9]));
            let mut out = Cursor::new(Vec::new());
            DynamicImage::ImageLuma8(image)
                .write_to(&mut out, ImageFormat::Png)
                .unwrap();
            out.into_inner()
        };
        assert!(big.len() < 100_000, "{}", big.len());
        let limits = ImageLimits {
            max_pixels: 4096 * 4096 - 1,
            ..ImageLimits::default()
        };
        assert_eq!(
            fit_image(&big, "image/png", &limits).unwrap_err().to_string(),
            "the image is 4096 × 4096 pixels, more than the 16777215 that are decoded to resize one"
        );
        // Within the pixel budget, the decoder's own allocation limit still holds.
        let tight = ImageLimits {
            max_decode_bytes: 1024 * 1024,
            ..ImageLimits::default()
        };
        assert!(
            matches!(
                fit_image(&big, "image/png", &tight),
                Err(ImageError::Undecodable { .. })
            ),
            "the 16 MiB decode is refused"
        );
    }

    /// A PNG of nothing but its signature, an `IHDR` declaring `width` × `height` (8-bit RGB),
    /// an empty `IDAT` and `IEND`: a few dozen bytes.
    fn png_header(width: u32, height: u32) -> Vec<u8> {
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &byte in bytes {
                crc ^= u32::from(byte);
                for _ in 0..8 {
                    crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
                }
            }
            !crc
        }
        fn chunk(out: &mut Vec<u8>, kind: [u8; 4], data: &[u8]) {
            out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
            let start = out.len();
            out.extend_from_slice(&kind);
            out.extend_from_slice(data);
            let crc = crc32(&out[start..]);
            out.extend_from_slice(&crc.to_be_bytes());
        }
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&width.to_be_bytes());
        ihdr.extend_from_slice(&height.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        chunk(&mut out, *b"IHDR", &ihdr);
        chunk(&mut out, *b"IDAT", &[]);
        chunk(&mut out, *b"IEND", &[]);
        out
    }

    #[test]
    fn a_decompression_bomb_is_refused_by_the_limits_not_by_running_out_of_memory() {
        // 100 000 × 100 000 RGB: 30 GB once decoded, declared in 57 bytes.
        let bomb = png_header(100_000, 100_000);
        assert!(bomb.len() < 64, "{}", bomb.len());
        assert!(matches!(
            fit_image(&bomb, "image/png", &ImageLimits::default()),
            Err(ImageError::TooManyPixels {
                width: 100_000,
                height: 100_000,
                ..
            })
        ));
        // Past the pixel check (a host that raised it), the decoder's allocation limit refuses
        // it before anything is allocated.
        let no_pixel_limit = ImageLimits {
            max_pixels: u64::MAX,
            ..ImageLimits::default()
        };
        match fit_image(&bomb, "image/png", &no_pixel_limit) {
            Err(ImageError::Undecodable {
                source: image::ImageError::Limits(_),
                ..
            }) => {}
            other => panic!("the decoder's limits must refuse it: {other:?}"),
        }
    }

    #[test]
    fn other_types_and_garbage_are_errors_in_words() {
        let limits = ImageLimits::default();
        assert!(
            fit_image(b"<svg/>", "image/svg+xml", &limits)
                .unwrap_err()
                .to_string()
                .contains("not a type models take")
        );
        assert!(
            fit_image(b"not a png", "image/png", &limits)
                .unwrap_err()
                .to_string()
                .contains("not a readable image")
        );
    }
}
