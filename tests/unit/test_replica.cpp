// A replica's flat buffers: gradients, weights and momentum, and a mirror that
// shares them with another replica.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "dpstudy/error.hpp"
#include "training_support.hpp"

using namespace dpstudy;
using namespace dpstudy::test;

namespace {

// A model whose gradient is its input: w * x, and a parameter no loss uses.
struct Scale : Model {
  Scale() : w(register_parameter("w", torch::ones({3}))), unused(register_parameter("unused", torch::ones({2}))) {}
  at::Tensor forward(const at::Tensor& x) override { return w * x; }
  at::Tensor w, unused;
};

}  // namespace

TEST(Replica, BackwardLeavesEachLossGradientAfreshWithTheBitsOfZeroPlusTheGradient) {
  Replica r(std::make_shared<Scale>());
  r.grads().fill_(5);
  r.backward(r.model().forward(torch::tensor({-0.0f, -2.0f, 3.0f})).sum());
  const at::Tensor expected = torch::tensor({0.0f, -2.0f, 3.0f, 0.0f, 0.0f});
  EXPECT_TRUE(at::equal(r.grads(), expected)) << r.grads();
  EXPECT_FALSE(std::signbit(r.grads()[0].item<float>()));  // 0 + -0 is +0: the bits autograd's addition gave
  r.backward(r.model().forward(torch::tensor({1.0f, 1.0f, 1.0f})).sum());
  EXPECT_TRUE(at::equal(r.grads(), torch::tensor({1.0f, 1.0f, 1.0f, 0.0f, 0.0f})));  // not added to the last
  for (const auto& p : r.model().parameters()) EXPECT_FALSE(p.grad().defined());     // no second copy kept
}

TEST(Replica, AMirrorSharesTheWeightsUpdatesAndMomentumButNotTheGradientsUntilItOwnsThemAgain) {
  torch::manual_seed(3);
  Replica a(std::make_shared<TinyMlp>()), b(std::make_shared<TinyMlp>());
  const at::Tensor b_before = b.params().clone();
  const SgdSettings sgd{OptimizerKind::momentum, 0.9, 0.0};
  const at::Tensor x = data().train_x.narrow(0, 0, 8), y = data().train_y.narrow(0, 0, 8);
  auto backward = [&](Replica& r) { r.backward(at::cross_entropy_loss(r.model().forward(x), y)); };

  b.mirror(a);
  ASSERT_TRUE(b.mirrors());
  EXPECT_TRUE(at::equal(b.params(), a.params()));
  backward(a);
  sgd_step(a, sgd, 0.1);  // a's update is b's
  EXPECT_TRUE(at::equal(b.params(), a.params()));
  EXPECT_TRUE(at::equal(b.momentum(), a.momentum()));
  EXPECT_GT(b.momentum().abs().sum().item<double>(), 0.0);
  // b's forward runs on a's weights; its backward fills b's gradients only.
  backward(a);
  const at::Tensor a_grads = a.grads().clone();
  backward(b);
  EXPECT_TRUE(at::equal(a.grads(), a_grads));
  EXPECT_TRUE(at::equal(b.grads(), a_grads));  // the same weights on the same batch
  EXPECT_THROW(a.mirror(b), Error);            // a chain of mirrors would leave a's storage behind

  b.own_weights();
  EXPECT_FALSE(b.mirrors());
  EXPECT_TRUE(at::equal(b.params(), a.params()));  // the values it mirrored, in its own storage
  EXPECT_FALSE(at::equal(b.params(), b_before));
  const at::Tensor b_owned = b.params().clone(), b_momentum = b.momentum().clone();
  backward(a);
  sgd_step(a, sgd, 0.1);
  EXPECT_FALSE(at::equal(a.params(), b_owned));
  EXPECT_TRUE(at::equal(b.params(), b_owned));
  EXPECT_TRUE(at::equal(b.momentum(), b_momentum));
  // Its model's parameters are its own storage again, not a's.
  for (const auto& p : b.model().parameters()) {
    const auto* data = static_cast<const char*>(p.data_ptr());
    const auto* begin = static_cast<const char*>(b.params().data_ptr());
    EXPECT_TRUE(data >= begin && data < begin + b.params().nbytes());
  }
}

// A GPU's updates read the rate from a tensor on the device (Trainer::advance
// refills it), so that a CUDA graph replays each step's rate: the update uses
// what the tensor holds when it runs, not the number passed.
TEST(Replica, AnUpdateWithARateTensorReadsTheRateItHolds) {
  const at::Tensor x = data().train_x.narrow(0, 0, 8), y = data().train_y.narrow(0, 0, 8);
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::nesterov}) {
    SCOPED_TRACE(int(kind));
    const SgdSettings sgd{kind, 0.9, 1e-3};
    torch::manual_seed(5);
    Replica number(std::make_shared<TinyMlp>());
    torch::manual_seed(5);
    Replica tensor(std::make_shared<TinyMlp>());
    const at::Tensor rate = at::full({}, 0.1, at::kFloat);
    for (int step = 0; step < 3; ++step) {
      for (Replica* r : {&number, &tensor}) r->backward(at::cross_entropy_loss(r->model().forward(x), y));
      sgd_step(number, sgd, 0.1);
      sgd_step(tensor, sgd, 7.0, rate);  // the number is not read
      // p -= rate * x rounds the product first; the number's add may fuse it.
      EXPECT_TRUE(at::allclose(tensor.params(), number.params(), 1e-5, 1e-7)) << "step " << step;
      EXPECT_TRUE(at::allclose(tensor.momentum(), number.momentum(), 1e-5, 1e-7)) << "step " << step;
    }
    // A rate of 0 leaves the weights as they are, bit for bit, while momentum still gathers.
    rate.fill_(0.0);
    tensor.backward(at::cross_entropy_loss(tensor.model().forward(x), y));
    const at::Tensor before = tensor.params().clone(), momentum = tensor.momentum().clone();
    sgd_step(tensor, sgd, 0.1, rate);
    EXPECT_TRUE(at::equal(tensor.params(), before));
    EXPECT_EQ(at::equal(tensor.momentum(), momentum), kind == OptimizerKind::sgd);
  }
}
