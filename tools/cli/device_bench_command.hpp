// `ffcv bench FILE --device cuda [--image-decode gpu]`, run by ffcv-train (which has LibTorch):
// the loader's batches taken as a training loop takes them, through DeviceTransfer to the GPU,
// each epoch timed to the GPU's end of its last batch.
//
// The image output goes to the GPU with to_device (the workers decode: the CPU path) or, with
// --image-decode gpu, as the records of random_resized_crop_encoded / center_crop_encoded that
// decode_crops decodes there (ffcv/torch/gpu_image_decode.hpp); the other outputs with
// to_device. Prints, per epoch, samples and samples/s, and on the GPU path which nvJPEG backend
// decoded how many images and decode_crops' host time per batch, and where the feed's time
// went per batch and what bounds it (feed_bound); --json prints one object.
// Without a visible GPU: one line saying so, exit status 1.
#pragma once

#include <string>
#include <vector>

namespace ffcv::tools {

int device_bench_command(const std::vector<std::string>& args);

// `ffcv doctor FILE --device cuda [--image-decode gpu]`: an untimed epoch of 5 batches (nvJPEG
// starts there), then one epoch (or --batches) the same way, then which part bounds the feed
// (ffcv/torch/transfer_timings.hpp's feed_bound: the workers, the device stages' host work, the
// GPU, or the consumer) and what helps.
int device_doctor_command(const std::vector<std::string>& args);

}  // namespace ffcv::tools
