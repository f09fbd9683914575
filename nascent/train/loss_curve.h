// A loss curve as an SVG picture, written next to a checkpoint so a user can
// see how a run went in any browser: the training loss per step (thin) and
// the validation loss at its evaluations (dots joined), on shared axes with
// tick labels. No plotting library: SVG is text.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace nascent::train {

struct LossCurve {
  std::string title;
  std::vector<std::pair<double, double>> train;       // (step, loss)
  std::vector<std::pair<double, double>> validation;  // (step, loss)
};

// The SVG document; finite points only are drawn.
std::string loss_curve_svg(const LossCurve& curve);
// Writes it atomically; IoError naming the file on failure.
void write_loss_curve(const std::string& path, const LossCurve& curve);

}  // namespace nascent::train
