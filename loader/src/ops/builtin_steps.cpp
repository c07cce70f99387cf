// Registers the built-in decoders and operations with OpRegistry.
#include "ffcv/op_registry.hpp"
#include "field_decoders.hpp"
#include "ops.hpp"

namespace ffcv {

void register_builtin_steps(OpRegistry& registry) {
  registry.register_decoder("int", "Int field -> int64 [1]",
                            [](const OpParams&) { return std::make_shared<IntDecoder>(); });
  registry.register_decoder("float", "Float field -> float64 [1]",
                            [](const OpParams&) { return std::make_shared<FloatDecoder>(); });
  registry.register_decoder("ndarray", "NDArray field -> its dtype and shape",
                            [](const OpParams&) { return std::make_shared<NdArrayDecoder>(); });
  registry.register_decoder(
      "bytes", "Bytes/JSON field -> uint8 [max size + 8]: zero-padded payload, then its u64 length",
      [](const OpParams&) { return std::make_shared<BytesDecoder>(); });
  registry.register_decoder("image", "RGBImage field of one image size -> uint8 [H, W, 3]",
                            [](const OpParams&) { return std::make_shared<SimpleImageDecoder>(); });
  registry.register_operation("random_horizontal_flip",
                              "mirror (H, W, C) left-right with `probability` (0.5)",
                              make_random_horizontal_flip);
}

}  // namespace ffcv
