#include "nascent/train/loss_curve.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "nascent/io/file.h"

namespace nascent::train {

namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 64, kRight = 16, kTop = 36, kBottom = 44;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A round step of about range / 5 (1, 2 or 5 times a power of ten).
double tick_step(double range) {
  const double raw = range / 5.0;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10.0 * p;
}

}  // namespace

std::string loss_curve_svg(const LossCurve& curve) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto* points : {&curve.train, &curve.validation}) {
    for (auto [x, y] : *points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // Nothing to draw.
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double ys = tick_step(y1 - y0);
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * ph; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      kWidth, kHeight, kLeft, escape(curve.title));
  // Axes, grid and tick labels.
  for (double y = y0; y <= y1 + ys / 2; y += ys) {
    s += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
        "stroke=\"#ddd\"/><text x=\"{:.1f}\" y=\"{:.1f}\" "
        "text-anchor=\"end\">{:g}</text>\n",
        kLeft, py(y), kLeft + pw, py(y), kLeft - 6, py(y) + 4, y);
  }
  const double xs = tick_step(x1 - x0);
  for (double x = std::ceil(x0 / xs) * xs; x <= x1; x += xs) {
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:g}</text>\n",
        px(x), kTop + ph + 16, x);
  }
  s += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
      "stroke=\"black\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">step</text>\n",
      kLeft, kTop, pw, ph, kLeft + pw / 2, kHeight - 8);
  auto polyline = [&](const std::vector<std::pair<double, double>>& points,
                      const char* style) {
    std::string p;
    for (auto [x, y] : points) {
      if (std::isfinite(x) && std::isfinite(y)) {
        p += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      }
    }
    if (!p.empty()) {
      s +=
          fmt::format("<polyline fill=\"none\" {} points=\"{}\"/>\n", style, p);
    }
  };
  polyline(curve.train, "stroke=\"#1f77b4\" stroke-width=\"1\"");
  polyline(curve.validation, "stroke=\"#d62728\" stroke-width=\"2\"");
  for (auto [x, y] : curve.validation) {
    if (std::isfinite(x) && std::isfinite(y)) {
      s += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"#d62728\"/>\n",
          px(x), py(y));
    }
  }
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"22\" fill=\"#1f77b4\" text-anchor=\"end\">"
      "training loss</text>\n<text x=\"{:.1f}\" y=\"22\" fill=\"#d62728\" "
      "text-anchor=\"end\">validation loss</text>\n</svg>\n",
      kWidth - kRight - 120, kWidth - kRight);
  return s;
}

void write_loss_curve(const std::string& path, const LossCurve& curve) {
  const std::string svg = loss_curve_svg(curve);
  io::AtomicFileWriter w(path);
  w.write(std::as_bytes(std::span(svg.data(), svg.size())));
  w.commit();
}

}  // namespace nascent::train
