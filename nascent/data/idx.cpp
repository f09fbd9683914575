#include "nascent/data/idx.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nascent/core/ops.h"
#include "nascent/data/gzip_file.h"

namespace nascent::data {

namespace {

constexpr size_t kMaxRank = 16;
constexpr size_t kChunk = size_t(1) << 24;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw FormatError(fmt::format("{}: {}", path, what));
}

void read_exact(GzipInput& in, void* out, size_t n, const char* what) {
  size_t got = in.read(out, n);
  if (got != n) {
    bad(in.path(), fmt::format("truncated: {} needs {} bytes, the file "
                               "ends after {}",
                               what, n, got));
  }
}

uint32_t big_endian_u32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         uint32_t(p[3]);
}

DType idx_dtype(unsigned char code, const std::string& path) {
  switch (code) {
    case 0x08:
      return DType::u8;
    case 0x0C:
      return DType::i32;
    case 0x0D:
      return DType::f32;
    case 0x0E:
      return DType::f64;
    case 0x09:
    case 0x0B:
      bad(path, fmt::format("IDX type 0x{:02X} ({}) is not supported (u8, "
                            "i32, f32, f64 are)",
                            code, code == 0x09 ? "signed byte" : "short"));
    default:
      bad(path, fmt::format("unknown IDX type code 0x{:02X}", code));
  }
}

}  // namespace

IdxArray read_idx(const std::string& path, uint64_t max_bytes) {
  GzipInput in(path);
  unsigned char magic[4];
  read_exact(in, magic, 4, "the magic number");
  if (magic[0] != 0 || magic[1] != 0) {
    bad(path, fmt::format("not an IDX file: the magic starts 0x{:02X}{:02X}, "
                          "not 0x0000",
                          magic[0], magic[1]));
  }
  IdxArray out;
  out.dtype = idx_dtype(magic[2], path);
  const size_t rank = magic[3];
  if (rank == 0 || rank > kMaxRank) {
    bad(path, fmt::format("rank {} is outside [1, {}]", rank, kMaxRank));
  }
  std::vector<unsigned char> dims(rank * 4);
  read_exact(in, dims.data(), dims.size(), "the dimensions");
  const uint64_t itemsize = size_of(out.dtype);
  uint64_t nbytes = itemsize;
  bool zero = false, over = false;
  std::vector<uint64_t> udims(rank);
  for (size_t i = 0; i < rank; ++i) udims[i] = big_endian_u32(&dims[4 * i]);
  for (uint64_t d : udims) {
    out.shape.push_back(int64_t(d));
    if (d == 0) {
      zero = true;
    } else if (nbytes > max_bytes / d) {
      over = true;  // nbytes * d > max_bytes, found without overflowing.
    } else {
      nbytes *= d;
    }
  }
  if (zero) nbytes = 0;
  if (!zero && over) {
    bad(path, fmt::format("shape {} of {} claims more than the limit of {} "
                          "bytes",
                          to_string(out.shape), name(out.dtype), max_bytes));
  }
  // Even with a zero dimension (no data), the others must give strides
  // that int64 holds (dims 0 x 0xFFFFFFFF x 0xFFFFFFFF do not).
  if (!shape_fits_int64(udims)) {
    bad(path, fmt::format("shape {} is too large: its element count or "
                          "strides overflow int64",
                          to_string(out.shape)));
  }

  // Grow as the data arrives: a truncated file costs only what it holds.
  while (out.data.size() < nbytes) {
    size_t have = out.data.size();
    size_t want = size_t(std::min<uint64_t>(kChunk, nbytes - have));
    out.data.resize(have + want);
    size_t got = in.read(out.data.data() + have, want);
    if (got != want) {
      bad(path, fmt::format("truncated: shape {} of {} needs {} data bytes, "
                            "the file holds {}",
                            to_string(out.shape), name(out.dtype), nbytes,
                            have + got));
    }
  }
  unsigned char extra;
  if (in.read(&extra, 1) != 0) {
    bad(path, fmt::format("bytes follow the {} data bytes of shape {}", nbytes,
                          to_string(out.shape)));
  }
  if (itemsize > 1) {
    // IDX is big-endian; every target nascent builds for is little-endian.
    for (size_t i = 0; i < out.data.size(); i += itemsize) {
      std::reverse(out.data.begin() + ptrdiff_t(i),
                   out.data.begin() + ptrdiff_t(i + itemsize));
    }
  }
  return out;
}

Tensor to_tensor(const IdxArray& array, Backend& backend) {
  return from_data(array.data.data(), array.shape, array.dtype, backend);
}

}  // namespace nascent::data
