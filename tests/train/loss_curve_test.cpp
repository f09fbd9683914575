// The loss-curve SVG: a polyline per series with one point per finite
// sample, markers for validation points, an escaped title, and a picture
// even with nothing to draw.
#include "nascent/train/loss_curve.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/io/test_files.h"

namespace nascent::train {
namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// The points of the n-th polyline.
size_t points_of(const std::string& svg, size_t n) {
  size_t at = 0;
  for (size_t i = 0; i <= n; ++i) at = svg.find("<polyline", at + 1);
  const size_t begin = svg.find("points=\"", at) + 8;
  const size_t end = svg.find('"', begin);
  return count(svg.substr(begin, end - begin), ",");
}

TEST(LossCurve, DrawsEachFinitePointOnce) {
  LossCurve c;
  c.title = "a <b> & \"c\"";
  for (int i = 1; i <= 50; ++i) c.train.emplace_back(i, 5.0 / i);
  c.train.emplace_back(51, NAN);
  c.validation = {{10, 2.0}, {20, 1.5}, {30, INFINITY}, {50, 1.2}};
  const std::string svg = loss_curve_svg(c);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(points_of(svg, 0), 50u);
  EXPECT_EQ(points_of(svg, 1), 3u);
  EXPECT_EQ(count(svg, "<circle"), 3u);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
}

TEST(LossCurve, EmptyAndFlatCurvesStillMakeAPicture) {
  EXPECT_EQ(count(loss_curve_svg({}), "<polyline"), 0u);
  LossCurve flat;
  flat.train = {{1, 2.0}, {2, 2.0}};
  const std::string svg = loss_curve_svg(flat);
  EXPECT_EQ(points_of(svg, 0), 2u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  testing::TempDir dir;
  write_loss_curve(dir.file("c.svg"), flat);
  EXPECT_EQ(testing::read_bytes(dir.file("c.svg")).size(), svg.size());
}

}  // namespace
}  // namespace nascent::train
