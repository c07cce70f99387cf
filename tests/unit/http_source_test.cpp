// Reading .beton files over HTTP: the range reader, the process cache and the loader against
// real servers on loopback (nginx, and a server with planted faults), compared byte for byte
// with the same file read locally.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "common/spawn.hpp"
#include "epoch_bytes.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/storage/epoch_plan.hpp"
#include "ffcv/storage/page_source.hpp"
#include "ffcv/storage/range_reader.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/storage/version_pins.hpp"
#include "ffcv/util/errors.hpp"
#include "http_test_server.hpp"
#include "test_support.hpp"

using namespace ffcv;
using test::epoch_bytes;
using test::TempDir;
using test::TestHttpServer;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Loopback must not go through a proxy the environment may name.
void bypass_proxies() {
  ::setenv("no_proxy", "127.0.0.1,localhost", 1);
  ::setenv("NO_PROXY", "127.0.0.1,localhost", 1);
}

// Retries quickly, so that tests of failures do not wait out production backoffs.
HttpOptions quick_http() {
  HttpOptions http;
  http.first_retry_delay_seconds = 0.01;
  http.stall_timeout_seconds = 2;
  http.connect_timeout_seconds = 2;
  return http;
}

std::vector<std::uint8_t> random_bytes(std::uint64_t size, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::uint8_t> bytes(size);
  for (std::uint8_t& byte : bytes) byte = static_cast<std::uint8_t>(random());
  return bytes;
}

// 1200 raw 48x40 images (5760 B each) whose pixels encode the index, and the index as label:
// about 6.6 MiB in 2 MiB pages, so an epoch reads 4 data pages. With `rotate`, sample i holds
// what sample (i + rotate) % 1200 holds otherwise: a file of the same size, in another order.
std::string write_dataset(const TempDir& dir, const std::string& name = "data.beton",
                          std::uint64_t rotate = 0) {
  const std::string path = dir.file(name);
  auto make = [rotate](std::uint64_t sample) -> std::vector<FieldValue> {
    const std::uint64_t i = (sample + rotate) % 1200;
    RgbImage image{48, 40, std::vector<std::uint8_t>(48 * 40 * 3)};
    for (std::size_t p = 0; p < image.pixels.size(); ++p) {
      image.pixels[p] = static_cast<std::uint8_t>(i * 13 + p * 7);
    }
    return {image, static_cast<std::int64_t>(i)};
  };
  DatasetWriter(
      path, {{"image", std::make_shared<RgbImageField>()}, {"label", std::make_shared<IntField>()}},
      {.page_size = 1u << 21})
      .write(test::FunctionSource(1200, make));
  return path;
}

LoaderOptions cached_options(OrderKind order) {
  LoaderOptions options;
  options.batch_size = 50;
  options.num_workers = 2;
  options.order = {.kind = order, .seed = 7};
  options.os_cache = false;
  options.cache.budget_bytes = 64u << 20;
  options.cache.reader_threads = 3;
  options.cache.http = quick_http();
  return options;
}

// The "bytes=A-B" ranges of the successful (206) requests among nginx's access log lines.
std::vector<std::string> served_ranges(const std::vector<std::string>& lines) {
  std::vector<std::string> ranges;
  for (const std::string& line : lines) {
    if (line.rfind("206 ", 0) != 0) continue;
    const std::size_t open = line.find('"');
    const std::size_t close = line.find('"', open + 1);
    ranges.push_back(line.substr(open + 1, close - open - 1));
  }
  return ranges;
}

// The bytes of the distinct pages the file's samples lie in: what one epoch must read.
std::uint64_t data_page_bytes(const Reader& reader) {
  std::set<std::uint64_t> pages;
  for (const std::uint64_t page : reader.page_of_samples()) pages.insert(page);
  std::uint64_t total = 0;
  for (const std::uint64_t page : pages) {
    total += std::min(reader.page_size(), reader.file_size() - page * reader.page_size());
  }
  return total;
}

// The message of the E that `action` throws, or what happened instead.
template <class E, class F>
std::string error_of(F&& action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  } catch (const std::exception& error) {
    return std::string("another exception: ") + error.what();
  }
  return "no exception";
}

}  // namespace

TEST_CASE("a file served over HTTP reads as the local file", "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::vector<std::uint8_t> bytes = random_bytes(3 * 1048576 + 123, 1);
  test::write_file(dir.file("blob.bin"), bytes);
  const auto server = TestHttpServer::nginx(dir.path());
  const std::string url = server->url("blob.bin");

  CHECK(is_url(url));
  CHECK(is_url("HTTPS://example.org/x.beton"));
  CHECK_FALSE(is_url("data/http.beton"));
  const std::unique_ptr<RangeReader> reader = open_range_reader(url);
  CHECK(reader->remote());
  CHECK(reader->location() == url);
  REQUIRE(reader->size() == bytes.size());

  std::mt19937_64 random(2);
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t offset = random() % bytes.size();
    const std::uint64_t length =
        1 + random() % std::min<std::uint64_t>(bytes.size() - offset, 300000);
    std::vector<std::uint8_t> out(length);
    REQUIRE(reader->read(offset, out));
    REQUIRE(std::equal(out.begin(), out.end(), bytes.begin() + static_cast<long>(offset)));
  }
  std::vector<std::uint8_t> tail(10);
  REQUIRE(reader->read(bytes.size() - 10, tail));
  CHECK(std::equal(tail.begin(), tail.end(), bytes.end() - 10));
  std::vector<std::uint8_t> beyond(11);
  CHECK_THROWS_WITH(reader->read(bytes.size() - 10, beyond),
                    Catch::Contains(url) && Catch::Contains("beyond the end of the file"));
}

TEST_CASE("a .beton over HTTP opens as the local file, fetching only its tables", "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::nginx(dir.path());
  const Reader local(path);
  const Reader remote(server->url("data.beton"));
  CHECK(remote.remote());
  CHECK_FALSE(local.remote());
  CHECK(remote.file_size() == local.file_size());
  CHECK(remote.num_samples() == local.num_samples());
  CHECK(remote.page_of_samples() == local.page_of_samples());
  std::uint64_t fetched = 0;
  for (const std::string& line : server->access_log()) {
    fetched += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  INFO("fetched " << fetched << " bytes of " << local.file_size());
  CHECK(fetched < local.file_size() / 2);  // header, metadata and allocation table only
  // A payload is fetched when asked for, and is the file's.
  const std::uint64_t ptr = local.allocations()[700].ptr;
  const auto a = local.payload(ptr);
  const auto b = remote.payload(ptr);
  CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));
}

TEST_CASE(
    "the loader over HTTP gives the local file's batches in every order, each page fetched "
    "once per epoch",
    "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::nginx(dir.path());
  const std::string url = server->url("data.beton");
  for (const OrderKind order :
       {OrderKind::kSequential, OrderKind::kRandom, OrderKind::kQuasiRandom}) {
    INFO("order " << static_cast<int>(order));
    Loader local(path, {}, cached_options(order));
    Loader remote(url, {}, cached_options(order));
    for (std::uint64_t epoch = 0; epoch < 2; ++epoch) {
      const std::size_t log_before = server->settled_access_log().size();
      CHECK(epoch_bytes(remote, epoch) == epoch_bytes(local, epoch));
      // What the epoch fetched: each of the file's data pages, once.
      std::vector<std::string> lines = server->settled_access_log();
      lines.erase(lines.begin(), lines.begin() + static_cast<long>(log_before));
      const std::vector<std::string> ranges = served_ranges(lines);
      const std::set<std::string> distinct(ranges.begin(), ranges.end());
      CHECK(ranges.size() == lines.size());  // no failed request
      CHECK(distinct.size() == ranges.size());
      std::set<std::uint64_t> pages;
      for (const std::uint64_t page : remote.reader().page_of_samples()) pages.insert(page);
      CHECK(ranges.size() == pages.size());
    }
  }
}

TEST_CASE("the process cache over HTTP stays within its budget", "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::nginx(dir.path());
  const std::string url = server->url("data.beton");
  LoaderOptions options = cached_options(OrderKind::kQuasiRandom);
  options.cache.budget_bytes = 3u << 21;  // 3 of the file's 4 data pages
  options.order.window_pages = 2;
  Loader local(path, {}, options);
  Loader remote(url, {}, options);
  const auto expected = epoch_bytes(local, 0);
  auto it = remote.epoch(0);
  const auto got = test::remaining_batch_bytes(it);
  CHECK(got == expected);
  const PageSourceStats stats = it.stats().pages;
  CHECK(stats.bytes_read == data_page_bytes(remote.reader()));  // each page once
  CHECK(stats.peak_resident_bytes <= options.cache.budget_bytes);
  CHECK(stats.peak_resident_bytes > 0);

  // RANDOM touches every page in the first batches: the budget is refused before any read.
  LoaderOptions random = cached_options(OrderKind::kRandom);
  random.cache.budget_bytes = 1u << 21;
  Loader too_small(url, {}, random);
  CHECK_THROWS_WITH(too_small.epoch(0).next(), Catch::Contains("budget is too small"));
}

TEST_CASE("HTTP reads survive dropped connections and server errors", "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  Loader local(path, {}, cached_options(OrderKind::kRandom));
  const auto expected = epoch_bytes(local, 0);
  for (const std::string mode : {"drop-every-3", "error-every-2"}) {
    INFO(mode);
    const auto server = TestHttpServer::faulty(path, mode);
    Loader remote(server->url("data.beton"), {}, cached_options(OrderKind::kRandom));
    CHECK(epoch_bytes(remote, 0) == expected);
  }
}

TEST_CASE("servers that ignore ranges or answer other bytes are refused with a clear error",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  {
    const auto server = TestHttpServer::faulty(path, "no-ranges");
    CHECK_THAT(error_of<FormatError>([&] { Reader(server->url("data.beton")); }),
               Catch::Contains(server->url("data.beton")) &&
                   Catch::Contains("does not serve byte ranges"));
  }
  {
    const auto server = TestHttpServer::faulty(path, "other-bytes");
    CHECK_THAT(
        error_of<IoError>([&] { open_range_reader(server->url("data.beton"), quick_http()); }),
        Catch::Contains("other bytes than those asked for"));
  }
  {
    const auto server = TestHttpServer::faulty(path, "too-long");
    const auto reader = open_range_reader(server->url("data.beton"), quick_http());
    std::vector<std::uint8_t> out(100);
    CHECK_THROWS_WITH(reader->read(4096, out), Catch::Contains("read bytes [4096, 4196)") &&
                                                   Catch::Contains("more bytes than the range"));
  }
}

TEST_CASE("a file that changes on the server while it is read is refused", "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  for (const std::string mode : {"changed-after-3", "resized-after-3"}) {
    INFO(mode);
    const auto server = TestHttpServer::faulty(path, mode);
    const auto reader = open_range_reader(server->url("data.beton"), quick_http());
    std::vector<std::uint8_t> out(64);
    REQUIRE(reader->read(0, out));
    REQUIRE(reader->read(64, out));
    CHECK_THAT(error_of<FormatError>([&] { reader->read(128, out); }),
               Catch::Contains("changed on the server"));
  }
  // nginx serving a file that is rewritten between epochs: the loader's next epoch says so.
  const auto server = TestHttpServer::nginx(dir.path());
  Loader remote(server->url("data.beton"), {}, cached_options(OrderKind::kSequential));
  CHECK(epoch_bytes(remote, 0).size() == 24);
  write_dataset(dir);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) + 24);
  CHECK_THROWS_WITH(epoch_bytes(remote, 1), Catch::Contains("changed on the server"));
}

TEST_CASE("unreachable servers, missing files and stalled transfers are one clear error",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  HttpOptions http = quick_http();
  http.max_attempts = 3;
  {
    const auto server = TestHttpServer::nginx(dir.path());
    const std::string missing = server->url("missing.beton");
    const Clock::time_point start = Clock::now();
    CHECK_THAT(error_of<IoError>([&] { open_range_reader(missing, http); }),
               Catch::Contains(missing) && Catch::Contains("HTTP 404"));
    CHECK(seconds_since(start) < 2.0);  // not retried
    CHECK(server->settled_access_log().size() == 1);
  }
  {
    auto server = TestHttpServer::nginx(dir.path());
    const std::string url = server->url("data.beton");
    server->stop();  // nothing listens there any more
    CHECK_THAT(error_of<IoError>([&] { open_range_reader(url, http); }),
               Catch::Contains(url) && Catch::Contains("3 attempts"));
  }
  {
    const auto server = TestHttpServer::faulty(path, "stall-after-1");
    http.stall_timeout_seconds = 1;
    http.max_attempts = 2;
    const auto reader = open_range_reader(server->url("data.beton"), http);
    std::vector<std::uint8_t> out(1000);
    const Clock::time_point start = Clock::now();
    CHECK_THAT(error_of<IoError>([&] { reader->read(5000, out); }),
               Catch::Contains("read bytes [5000, 6000)") && Catch::Contains("2 attempts"));
    CHECK(seconds_since(start) < 10.0);
  }
  {
    LoaderOptions options = cached_options(OrderKind::kSequential);
    options.os_cache = true;
    const auto server = TestHttpServer::nginx(dir.path());
    CHECK_THROWS_WITH(Loader(server->url("data.beton"), {}, options),
                      Catch::Contains("cannot be memory-mapped"));
  }
}

TEST_CASE("reads over slow HTTP stop at once when interrupted or when the iterator goes",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  // 128 KiB/s per request: a 2 MiB page takes 16 s.
  const auto server = TestHttpServer::nginx(dir.path(), 128 * 1024);
  const std::string url = server->url("data.beton");
  {
    const auto reader = open_range_reader(url, quick_http());
    std::vector<std::uint8_t> out(2u << 20);
    bool finished = true;
    std::thread reading([&] { finished = reader->read(0, out); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const Clock::time_point start = Clock::now();
    reader->interrupt();
    reading.join();
    CHECK_FALSE(finished);
    CHECK(seconds_since(start) < 1.0);
    reader->resume();
    std::vector<std::uint8_t> small(10);
    CHECK(reader->read(0, small));
  }
  {
    Loader remote(url, {}, cached_options(OrderKind::kSequential));
    auto it = remote.epoch(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const Clock::time_point start = Clock::now();
    { auto gone = std::move(it); }
    CHECK(seconds_since(start) < 1.0);
  }
}

TEST_CASE("the cancel hook ends a wait on a silent server or in a retry's backoff at once",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  // Cancels 300 ms after the wait starts; the waits below would last a minute without it.
  const auto cancel_soon = [](HttpOptions& http, std::atomic<int>& asked) {
    const Clock::time_point start = Clock::now();
    http.cancelled = [start, &asked] {
      ++asked;
      return seconds_since(start) > 0.3;
    };
  };
  {
    // Default timeouts: 4 attempts of a 15 s stall each.
    const auto server = TestHttpServer::faulty(path, "silent");
    HttpOptions http;
    std::atomic<int> asked{0};
    cancel_soon(http, asked);
    const Clock::time_point start = Clock::now();
    CHECK_THAT(
        error_of<CancelledError>([&] { open_range_reader(server->url("data.beton"), http); }),
        Catch::Contains(server->url("data.beton")) && Catch::Contains("cancelled"));
    CHECK(seconds_since(start) < 2.0);
    CHECK(asked >= 2);  // asked repeatedly, not once
  }
  {
    // Nothing listens: each attempt fails at once, then waits 30 s before the next.
    auto server = TestHttpServer::nginx(dir.path());
    const std::string url = server->url("data.beton");
    server->stop();
    HttpOptions http;
    http.first_retry_delay_seconds = 30;
    std::atomic<int> asked{0};
    cancel_soon(http, asked);
    const Clock::time_point start = Clock::now();
    CHECK_THROWS_AS(open_range_reader(url, http), CancelledError);
    CHECK(seconds_since(start) < 2.0);
  }
  {
    // A hook that never cancels changes nothing: the file opens and reads as without one.
    const auto server = TestHttpServer::nginx(dir.path());
    HttpOptions http = quick_http();
    std::atomic<int> asked{0};
    http.cancelled = [&asked] {
      ++asked;
      return false;
    };
    const auto reader = open_range_reader(server->url("data.beton"), http);
    std::vector<std::uint8_t> out(4096);
    CHECK(reader->read(1000, out));
  }
}

TEST_CASE("https: a file served over TLS reads as the local file, an untrusted server is refused",
          "[http]") {
  bypass_proxies();
  ::unsetenv("CURL_CA_BUNDLE");
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::nginx(dir.path(), 0, /*tls=*/true);
  const std::string url = server->url("data.beton");
  REQUIRE(url.rfind("https://", 0) == 0);
  LoaderOptions options = cached_options(OrderKind::kRandom);
  options.cache.http.ca_file = server->certificate();
  Loader local(path, {}, cached_options(OrderKind::kRandom));
  Loader remote(url, {}, options);
  CHECK(epoch_bytes(remote, 0) == epoch_bytes(local, 0));
  // Without the certificate to trust, at once (not retried) and saying why.
  HttpOptions untrusted = quick_http();
  const Clock::time_point start = Clock::now();
  CHECK_THAT(error_of<IoError>([&] { open_range_reader(url, untrusted); }),
             Catch::Contains(url) && Catch::Contains("certificate"));
  CHECK(seconds_since(start) < 2.0);
}

TEST_CASE("the epoch plan lists each page once, in order of first use, with its peak", "[pages]") {
  // Pages of 100 bytes in a file of 950: page 9 is 50 bytes long, page 12 lies beyond the end.
  const std::vector<std::vector<std::uint64_t>> batches{{3, 1, 3}, {1, 2}, {9}, {12, 2}};
  const EpochPlan plan = plan_epoch(batches, 100, 950, 1);
  std::vector<std::uint64_t> order;
  for (const PlannedPage& page : plan.pages) order.push_back(page.page);
  CHECK(order == std::vector<std::uint64_t>{1, 3, 2, 9, 12});
  CHECK(plan.pages[0].uses == 2);  // page 1: batches 0 and 1
  CHECK(plan.pages[0].first_batch == 0);
  CHECK(plan.pages[0].last_batch == 1);
  CHECK(plan.pages[1].uses == 1);  // page 3 once, though listed twice
  CHECK(plan.pages[3].length == 50);
  CHECK(plan.pages[4].length == 100);
  CHECK(plan.batch_pages[0] == std::vector<std::uint32_t>{0, 1});
  CHECK(plan.batch_pages[3] == std::vector<std::uint32_t>{2, 4});
  CHECK(plan.total_bytes() == 450);
  // Resident while batch b is acquired, one earlier batch still held (K = 1):
  //   b=0: pages 1, 3           200
  //   b=1: 1, 3 (batch 0 held), 2   300
  //   b=2: 1, 2 (batch 1 held), 9   250 (page 3's last use was batch 0)
  //   b=3: 2, 9, 12                 250
  CHECK(plan.peak_bytes == 300);
  CHECK(plan.peak_pages == 3);
  CHECK(plan.peak_batch == 1);
  // K = 3: nothing is freed before the end.
  CHECK(plan_epoch(batches, 100, 950, 3).peak_bytes == 450);
  CHECK(plan_epoch({}, 100, 950, 1).pages.empty());
  CHECK_THROWS_AS(plan_epoch(batches, 100, 950, 0), ConfigError);
  CHECK_THROWS_AS(plan_epoch(batches, 0, 950, 1), ConfigError);
}

TEST_CASE("ffcv inspect, bench and doctor take a URL where they take a path", "[http][cli]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::nginx(dir.path());
  const std::string url = server->url("data.beton");
  std::string local, remote;
  REQUIRE(test::run_cli("inspect " + path + " --json", local) == 0);
  REQUIRE(test::run_cli("inspect " + url + " --json", remote) == 0);
  // The same report but for the file's name.
  std::string named_local = local;
  named_local.replace(named_local.find(path), path.size(), url);
  CHECK(remote == named_local);
  CHECK(test::run_cli("inspect " + url + " --sample 7", remote) == 0);
  CHECK_THAT(remote, Catch::Contains("7"));
  // bench reads every page of the epoch over HTTP, as from the local file.
  REQUIRE(test::run_cli("bench " + path + " --json --num-workers 2 --os-cache false", local) == 0);
  REQUIRE(test::run_cli("bench " + url + " --json --num-workers 2", remote) == 0);
  CHECK_THAT(local, Catch::Contains("\"samples\": 1024"));  // 4 batches of 256
  CHECK_THAT(remote, Catch::Contains("\"samples\": 1024"));
  // And the same bytes from storage, page for page.
  const std::size_t at = local.find("\"storage_bytes_read\": ");
  REQUIRE(at != std::string::npos);
  CHECK_THAT(remote, Catch::Contains(local.substr(at, local.find(',', at) - at)));
  std::string advice;
  CHECK(test::run_cli("doctor " + url + " --num-workers 2", advice) == 0);
  CHECK_THAT(advice, Catch::Contains(url));
  // A URL that does not answer is one clear error naming it.
  CHECK(test::run_cli("inspect " + server->url("missing.beton"), remote) == 1);
  CHECK_THAT(remote, Catch::Contains("missing.beton") && Catch::Contains("404"));
}

namespace {

// Every line of a file (the fault server's FILE.auth), empty when it does not exist.
std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

// "http://127.0.0.1:PORT/..." with "USER_INFO@" after the scheme.
std::string with_user_info(const std::string& url, const std::string& user_info) {
  return "http://" + user_info + "@" + url.substr(std::string("http://").size());
}

}  // namespace

TEST_CASE("a file replaced on the server between two opens is one clear error, never a mix",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const std::string shuffled = write_dataset(dir, "shuffled.beton", 600);
  REQUIRE(std::filesystem::file_size(path) == std::filesystem::file_size(shuffled));
  const std::string changed = "changed on the server since this command first opened it";
  {
    // The first open pins "original"; from the second open on, the server has the other file.
    const auto server = TestHttpServer::faulty(path, "swap-on-reopen", shuffled);
    const std::string url = server->url("data.beton");
    const Reader first(url);
    CHECK(pinned_version(url).has_value());
    const std::string error =
        error_of<FileChangedError>([&] { Loader(url, {}, cached_options(OrderKind::kRandom)); });
    CHECK_THAT(error,
               Catch::Contains(url) && Catch::Contains(changed) && Catch::Contains("\"original\""));
    // The first reader's own later reads are refused too (the server answers 412 to If-Match).
    CHECK_THAT(error_of<FileChangedError>([&] { first.payload(first.allocations()[1100].ptr); }),
               Catch::Contains(changed));
    // Without the pin, the second open takes the new file: what the pin prevents.
    forget_pinned_versions();
    Loader fresh(url, {}, cached_options(OrderKind::kSequential));
    CHECK(fresh.reader().num_samples() == 1200);
  }
  {
    // nginx, the file rewritten in place with the same size (a later modification time, so a
    // new ETag): the loader opened after it is refused before any batch.
    const auto server = TestHttpServer::nginx(dir.path());
    const std::string url = server->url("data.beton");
    const Reader first(url);
    const auto mtime = std::filesystem::last_write_time(path);
    std::filesystem::copy_file(shuffled, path, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::last_write_time(path, mtime + std::chrono::seconds(5));
    CHECK_THAT(error_of<FileChangedError>(
                   [&] { Loader(url, {}, cached_options(OrderKind::kQuasiRandom)).epoch(0); }),
               Catch::Contains(changed));
    CHECK(served_ranges(server->settled_access_log()).size() < 10);  // the tables, no page
  }
}

TEST_CASE("ffcv bench and inspect --verify over a replaced file stop with one error",
          "[http][cli]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const std::string shuffled = write_dataset(dir, "shuffled.beton", 600);
  std::string output;
  {
    const auto server = TestHttpServer::faulty(path, "swap-on-reopen", shuffled);
    CHECK(test::run_cli("bench " + server->url("data.beton") + " --num-workers 2", output) == 1);
    CHECK(occurrences(output, "changed on the server") == 1);
  }
  // How many requests inspect makes to open the file; the ETag changes right after them.
  std::size_t open_requests = 0;
  {
    const auto server = TestHttpServer::faulty(path, "correct");
    REQUIRE(test::run_cli("inspect " + server->url("data.beton") + " --json", output) == 0);
    open_requests = lines_of(path + ".log").size();
    REQUIRE(open_requests > 0);
  }
  const auto server =
      TestHttpServer::faulty(path, "changed-after-" + std::to_string(open_requests));
  CHECK(test::run_cli("inspect " + server->url("data.beton") + " --verify", output) == 1);
  INFO(output);
  CHECK(occurrences(output, "changed on the server") == 1);
  CHECK(occurrences(output, "sample ") == 0);
}

TEST_CASE("pinned versions pass to child processes, which refuse another version", "[http][cli]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::faulty(path, "correct");
  const std::string url = server->url("data.beton");
  open_range_reader(url, quick_http());
  // A child started as the CLI starts ranks and grid points sees the pin.
  const pid_t child = tools::spawn_process(
      "/bin/sh", {"-c", "printf '%s' \"$FFCV_HTTP_PINS\" > " + dir.file("pins.txt")});
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const std::string pins = test::text_of(dir.file("pins.txt"));
  CHECK_THAT(pins, Catch::Contains(url) && Catch::Contains("\"original\"") &&
                       Catch::Contains(std::to_string(std::filesystem::file_size(path))));
  // A child whose parent pinned an older version refuses the file the server has now.
  std::string output;
  const std::string stale =
      std::string(kPinsEnvironmentVariable) + "=\"$(printf '%s\\t%s\\t\\t%s' " +
      std::to_string(std::filesystem::file_size(path)) + " '\"older\"' " + url + ")\" ";
  CHECK(test::run_cli("inspect " + url, output, stale) == 1);
  CHECK_THAT(output, Catch::Contains("changed on the server") && Catch::Contains("\"older\""));
  CHECK(test::run_cli("inspect " + url, output) == 0);
  CHECK(test::run_cli("inspect " + url, output, kPinsEnvironmentVariable + std::string("=junk ")) ==
        1);
  CHECK_THAT(output, Catch::Contains(kPinsEnvironmentVariable));
}

TEST_CASE("HTTP timeouts: documented defaults, the environment, the setting", "[http]") {
  for (const char* name : {"FFCV_HTTP_CONNECT_TIMEOUT", "FFCV_HTTP_STALL_TIMEOUT",
                           "FFCV_HTTP_REQUEST_TIMEOUT", "FFCV_HTTP_ATTEMPTS"}) {
    ::unsetenv(name);
  }
  const ResolvedHttpOptions defaults = resolve_http_options({});
  CHECK(defaults.connect_timeout_seconds == 10);
  CHECK(defaults.stall_timeout_seconds == 15);
  CHECK(defaults.request_timeout_seconds == 300);
  CHECK(defaults.max_attempts == 4);
  ::setenv("FFCV_HTTP_STALL_TIMEOUT", "2.5", 1);
  ::setenv("FFCV_HTTP_ATTEMPTS", "7", 1);
  CHECK(resolve_http_options({}).stall_timeout_seconds == 2.5);
  CHECK(resolve_http_options({}).max_attempts == 7);
  HttpOptions given;
  given.stall_timeout_seconds = 4;
  CHECK(resolve_http_options(given).stall_timeout_seconds == 4);  // the setting wins
  ::setenv("FFCV_HTTP_REQUEST_TIMEOUT", "soon", 1);
  CHECK_THROWS_WITH(resolve_http_options({}),
                    Catch::Contains("FFCV_HTTP_REQUEST_TIMEOUT") && Catch::Contains("soon"));
  ::setenv("FFCV_HTTP_REQUEST_TIMEOUT", "-1", 1);
  CHECK_THROWS_AS(resolve_http_options({}), ConfigError);
  ::setenv("FFCV_HTTP_ATTEMPTS", "0", 1);
  ::unsetenv("FFCV_HTTP_REQUEST_TIMEOUT");
  CHECK_THROWS_WITH(resolve_http_options({}), Catch::Contains("FFCV_HTTP_ATTEMPTS"));
  given.max_attempts = 0;
  CHECK_THROWS_WITH(resolve_http_options(given), Catch::Contains("max_attempts"));
  ::unsetenv("FFCV_HTTP_STALL_TIMEOUT");
  ::unsetenv("FFCV_HTTP_ATTEMPTS");
}

TEST_CASE("a trickling or silent server fails in about its timeout, naming it and the attempts",
          "[http]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  HttpOptions http;
  http.first_retry_delay_seconds = 0.01;
  http.max_attempts = 2;
  {
    // 2 bytes/s after the open: under the stall limit, so each attempt ends after 1 s.
    const auto server = TestHttpServer::faulty(path, "trickle-after-1");
    http.stall_timeout_seconds = 1;
    const auto reader = open_range_reader(server->url("data.beton"), http);
    std::vector<std::uint8_t> out(1000);
    const Clock::time_point start = Clock::now();
    const std::string error = error_of<IoError>([&] { reader->read(5000, out); });
    const double seconds = seconds_since(start);
    CHECK_THAT(error, Catch::Contains("read bytes [5000, 6000)") &&
                          Catch::Contains("stall timeout") && Catch::Contains("1 s") &&
                          Catch::Contains("2 attempts"));
    CHECK(seconds >= 1.5);
    CHECK(seconds < 8);
  }
  {
    // The same server with a generous stall limit: the request timeout ends each attempt.
    const auto server = TestHttpServer::faulty(path, "trickle-after-1");
    http.stall_timeout_seconds = 100;
    http.request_timeout_seconds = 1.5;
    const auto reader = open_range_reader(server->url("data.beton"), http);
    std::vector<std::uint8_t> out(1000);
    const Clock::time_point start = Clock::now();
    CHECK_THAT(error_of<IoError>([&] { reader->read(5000, out); }),
               Catch::Contains("request timeout") && Catch::Contains("1.5 s") &&
                   Catch::Contains("2 attempts"));
    CHECK(seconds_since(start) >= 2.5);
    CHECK(seconds_since(start) < 8);
  }
  {
    // ffcv inspect against a server that never answers, timeouts from the environment.
    const auto server = TestHttpServer::faulty(path, "silent");
    std::string output;
    const Clock::time_point start = Clock::now();
    CHECK(test::run_cli("inspect " + server->url("data.beton"), output,
                        "FFCV_HTTP_STALL_TIMEOUT=1 FFCV_HTTP_ATTEMPTS=2 ") == 1);
    CHECK(seconds_since(start) < 8);
    CHECK_THAT(output, Catch::Contains(server->url("data.beton")) &&
                           Catch::Contains("stall timeout, FFCV_HTTP_STALL_TIMEOUT") &&
                           Catch::Contains("2 attempts"));
  }
}

TEST_CASE("passwords in URLs are used but never shown, and netrc or the environment give them too",
          "[http][cli]") {
  bypass_proxies();
  CHECK(url_without_password("http://alice:s3cret@host:80/a.beton") ==
        "http://alice@host:80/a.beton");
  CHECK(url_without_credentials("https://alice:s3cret@host/a.beton") == "https://host/a.beton");
  CHECK(url_without_password("data/a@b.beton") == "data/a@b.beton");
  CHECK(url_without_password("http://host/a@b.beton") == "http://host/a@b.beton");
  CHECK(redact_url_passwords("x: http://u:p@h/a and https://v:q@g/b.") ==
        "x: http://u@h/a and https://v@g/b.");
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::faulty(path, "correct");
  const std::string url = server->url("data.beton");
  const std::string secret_url = with_user_info(url, "alice:s3cret");
  {
    const Reader reader(secret_url);
    CHECK(reader.path() == with_user_info(url, "alice"));
    CHECK(lines_of(path + ".auth").back() == "alice:s3cret");  // it was sent
  }
  std::string output;
  CHECK(test::run_cli("inspect " + secret_url + " --json", output) == 0);
  CHECK_THAT(output, Catch::Contains("alice@") && !Catch::Contains("s3cret"));
  CHECK(test::run_cli("inspect " + secret_url + " --verify", output) == 0);
  CHECK_THAT(output, !Catch::Contains("s3cret"));
  CHECK(test::run_cli("inspect " + with_user_info(server->url("missing.beton"), "alice:s3cret"),
                      output) == 1);
  CHECK_THAT(output,
             Catch::Contains("404") && Catch::Contains("alice@") && !Catch::Contains("s3cret"));
  CHECK_THAT(error_of<IoError>([&] {
               open_range_reader(with_user_info(server->url("missing.beton"), "alice:s3cret"));
             }),
             !Catch::Contains("s3cret"));
  // From the environment, and from a netrc file, when the URL holds none.
  CHECK(test::run_cli("inspect " + url, output, "FFCV_HTTP_USER=bob FFCV_HTTP_PASSWORD=pw2 ") == 0);
  CHECK(lines_of(path + ".auth").back() == "bob:pw2");
  std::ofstream(dir.file("netrc")) << "machine 127.0.0.1 login carol password pw3\n";
  CHECK(test::run_cli("inspect " + url, output, "NETRC=" + dir.file("netrc") + " ") == 0);
  CHECK(lines_of(path + ".auth").back() == "carol:pw3");
}

TEST_CASE("URL schemes other than http and https are refused, naming those supported", "[http]") {
  for (const std::string location :
       {"file:///tmp/data.beton", "ftp://example.org/data.beton", "gopher://example.org/x",
        "FTP://user:pw@example.org/data.beton"}) {
    INFO(location);
    CHECK_THAT(error_of<ConfigError>([&] { open_range_reader(location); }),
               Catch::Contains("is not supported") && Catch::Contains("http:// or https://") &&
                   !Catch::Contains(":pw@"));
    CHECK_THAT(error_of<ConfigError>([&] { Reader{location}; }),
               Catch::Contains("is not supported"));
    CHECK_THAT(error_of<ConfigError>([&] { make_process_cache(location, 4096, {}); }),
               Catch::Contains("is not supported"));
  }
  CHECK_THAT(error_of<ConfigError>([&] { open_range_reader("file:///tmp/data.beton"); }),
             Catch::Contains("file://") && Catch::Contains("give its path"));
  std::string output;
  CHECK(test::run_cli("inspect ftp://example.org/data.beton", output) == 1);
  CHECK_THAT(output, Catch::Contains("ftp:// is not supported"));
  // A local path is no URL, whatever characters it holds.
  CHECK_THAT(error_of<IoError>([&] { open_range_reader("no-such-folder/a:b.beton"); }),
             Catch::Contains("no-such-folder/a:b.beton"));
}

TEST_CASE(
    "a server that needs a login gets it from netrc or the environment, and says how when "
    "none is given",
    "[http][cli]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::faulty(path, "basic-auth-carol:pw3");
  const std::string url = server->url("data.beton");
  std::ofstream(dir.file("empty-netrc")) << "";
  std::ofstream(dir.file("netrc")) << "machine 127.0.0.1\n  login carol\n  password pw3\n";
  const std::string no_netrc = "NETRC=" + dir.file("empty-netrc") + " ";
  const std::string netrc = "NETRC=" + dir.file("netrc") + " ";
  std::string output;
  // No credentials: refused, with where to give them.
  CHECK(test::run_cli("inspect " + url, output, no_netrc) == 1);
  CHECK_THAT(output, Catch::Contains(url) && Catch::Contains("HTTP 401") &&
                         Catch::Contains("~/.netrc") && Catch::Contains("FFCV_HTTP_PASSWORD"));
  // A wrong password in the URL: refused, and not shown.
  CHECK(test::run_cli("inspect " + with_user_info(url, "carol:wrong-pw"), output, no_netrc) == 1);
  CHECK_THAT(output, Catch::Contains("HTTP 401") && Catch::Contains(with_user_info(url, "carol")) &&
                         !Catch::Contains("wrong-pw"));
  // From a netrc file: every sample read and decoded, pages included.
  CHECK(test::run_cli("inspect " + url + " --verify", output, netrc) == 0);
  CHECK_THAT(output, Catch::Contains("1200 samples decoded"));
  // The user in the URL, the password from netrc.
  CHECK(test::run_cli("inspect " + with_user_info(url, "carol"), output, netrc) == 0);
  // From the environment.
  CHECK(test::run_cli("inspect " + url, output,
                      no_netrc + "FFCV_HTTP_USER=carol FFCV_HTTP_PASSWORD=pw3 ") == 0);
  CHECK(test::run_cli("inspect " + with_user_info(url, "carol"), output,
                      no_netrc + "FFCV_HTTP_PASSWORD=pw3 ") == 0);
  // The library with the password in the URL: the loader's page reads log in too, and give the
  // bytes of the local file.
  Loader local(path, {}, cached_options(OrderKind::kRandom));
  Loader remote(with_user_info(url, "carol:pw3"), {}, cached_options(OrderKind::kRandom));
  CHECK(remote.reader().path() == with_user_info(url, "carol"));
  CHECK(epoch_bytes(remote, 0) == epoch_bytes(local, 0));
  for (const std::string& login : lines_of(path + ".auth")) {
    CHECK((login == "carol:pw3" || login == "carol:wrong-pw"));
  }
}

TEST_CASE("a server that sends no ETag nor Last-Modified is read with one warning", "[http][cli]") {
  bypass_proxies();
  TempDir dir;
  const std::string path = write_dataset(dir);
  const auto server = TestHttpServer::faulty(path, "no-validators");
  const std::string url = server->url("data.beton");
  std::string out;
  // bench opens the URL more than once (the label check, then the measured loader): one line.
  REQUIRE(test::run_cli("bench " + url + " --num-workers 2 --epochs 1", out) == 0);
  const std::string warning = "the server sends neither an ETag nor a Last-Modified date";
  REQUIRE_THAT(out, Catch::Contains(url + ": " + warning));
  CHECK(out.find(warning) == out.rfind(warning));
  // A server that sends them: no warning.
  const auto guarded = TestHttpServer::faulty(path, "correct");
  REQUIRE(test::run_cli("inspect " + guarded->url("data.beton"), out) == 0);
  CHECK_THAT(out, !Catch::Contains(warning));
}
