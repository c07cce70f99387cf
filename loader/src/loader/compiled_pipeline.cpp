#include "compiled_pipeline.hpp"

#include "ffcv/util/errors.hpp"

namespace ffcv {

void check_followable_image(const CompiledPipeline& image, const std::string& where) {
  if (!image.decoder->maps_geometry()) {
    throw ConfigError(where + "whose decoder '" + image.decoder->name() +
                      "' cannot say where each sample's pixels go; use one of the image "
                      "decoders (image, random_resized_crop, center_crop, their _encoded twins)");
  }
  for (const auto& operation : image.operations) {
    if (operation->pixel_geometry() == PixelGeometry::kUnknown) {
      throw ConfigError(where + "whose step '" + operation->name() +
                        "' does not say where it moves pixels, so boxes cannot follow it");
    }
  }
  if (image.has_batch_stage()) {
    throw ConfigError(where + "whose batch step '" + image.batch_operations.front()->name() +
                      "' mixes samples: boxes cannot follow it");
  }
}

void link_followers(std::vector<CompiledPipeline>& pipelines) {
  for (CompiledPipeline& pipeline : pipelines) {
    pipeline.follows = pipeline.decoder->follows();
    if (pipeline.follows.empty()) continue;
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < pipelines.size(); ++i) {
      if (pipelines[i].name == pipeline.follows) found = i;
    }
    const std::string where = "output '" + pipeline.name + "' follows '" + pipeline.follows + "'";
    if (!found) throw ConfigError(where + ", which is no output of the loader");
    const CompiledPipeline& leader = pipelines[*found];
    if (&leader == &pipeline) throw ConfigError(where + ": itself");
    if (!leader.ragged) {
      if (!pipeline.decoder->rows_move()) {
        throw ConfigError(where +
                          ", an image, but its rows are values, which do not move with "
                          "pixels: give rows = boxes_xyxy or boxes_xywh, or follow the "
                          "boxes output");
      }
      check_followable_image(leader, where + ", ");
    } else {
      if (pipeline.decoder->rows_move() || !leader.decoder->rows_move() ||
          leader.decoder->follows().empty()) {
        throw ConfigError(where +
                          ", a ragged output: values may follow the boxes of an image "
                          "output (rows = values here, boxes that follow an image there)");
      }
    }
    pipeline.follows_output = found;
    pipeline.follows_ragged = leader.ragged.has_value();
  }
}

void map_pipeline_geometry(const CompiledPipeline& image, const Reader& reader, std::uint64_t epoch,
                           const std::array<std::uint32_t, 2>& epoch_key, std::uint64_t index,
                           PlaneMaps& maps) {
  maps.clear();
  SampleContext context{epoch, index, image.stream_base, epoch_key};
  image.decoder->map_geometry(reader.column(index, image.field), context, maps);
  for (std::size_t k = 0; k < image.operations.size(); ++k) {
    if (image.operations[k]->pixel_geometry() != PixelGeometry::kMoves) continue;
    context.stream = image.stream_base + static_cast<std::uint32_t>(k + 1);
    image.operations[k]->map_geometry(context, maps);
  }
}

}  // namespace ffcv
