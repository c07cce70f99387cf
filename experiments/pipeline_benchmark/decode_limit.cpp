// The decode limit of a .beton file's JPEGs: libjpeg-turbo decoding each whole image on one
// core (fast IDCT, into a reused buffer), as the baseline of the training-pipeline benchmark.
// Usage: ffcv_decode_limit FILE [passes]   prints {"images": N, "seconds": S, "images_per_s": R}
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/reader.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ffcv_decode_limit FILE [passes]\n");
    return 2;
  }
  try {
    const ffcv::Reader reader(argv[1]);
    const int passes = argc > 2 ? std::stoi(argv[2]) : 2;
    const std::size_t field = reader.field_index("image");
    std::vector<std::uint8_t> pixels;
    std::uint64_t images = 0;
    double seconds = 0;
    for (int pass = 0; pass <= passes; ++pass) {  // pass 0 warms caches and is not timed
      const auto start = std::chrono::steady_clock::now();
      for (std::uint64_t i = 0; i < reader.num_samples(); ++i) {
        const ffcv::ImageMetadata image = ffcv::ImageMetadata::load(reader.column(i, field));
        if (image.mode != ffcv::StoredImageMode::kJpg) continue;
        pixels.resize(std::size_t{image.width} * image.height * 3);
        ffcv::decode_jpeg_into(reader.payload(image.data_ptr), pixels.data(), image.width,
                               image.height);
        if (pass > 0) ++images;
      }
      if (pass > 0) {
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
    std::printf("{\"images\": %llu, \"seconds\": %.6f, \"images_per_s\": %.1f}\n",
                static_cast<unsigned long long>(images), seconds, images / seconds);
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv_decode_limit: %s\n", error.what());
    return 1;
  }
}
