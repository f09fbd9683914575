// Image classification on Fashion-MNIST: the two models `nascent train`
// offers, as a task for the classifier trainer (train/classifier.h).
//
//   cnn: conv 3x3 1->32, ReLU, max pool 2, conv 3x3 32->64, ReLU, max pool 2,
//        flatten, linear 3136->128, ReLU, linear 128->10 (421 642 parameters)
//   mlp: flatten, linear 784->512, ReLU, linear 512->256, ReLU,
//        linear 256->10 (535 818 parameters)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nascent/nn/layers.h"
#include "nascent/train/classifier.h"

namespace nascent::models {

// "cnn" or "mlp"; ValueError naming the choices otherwise.
std::shared_ptr<nn::Sequential> fashion_mnist_model(const std::string& kind,
                                                    Backend& backend,
                                                    uint64_t seed);

// Both models, with Fashion-MNIST's input normalisation.
train::ClassifierTask fashion_mnist_task();

}  // namespace nascent::models
