// Summaries of per-prediction scores (conventions in trellis/eval/stats.hpp).
#include "trellis/eval/stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace trellis::eval {
namespace {

double mean(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return x.empty() ? 0 : s / double(x.size());
}

// Sample covariance of x and y (the variance when they are the same), n − 1 in the denominator.
double covariance(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2) return 0;
  const double mx = mean(x), my = mean(y);
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += (x[i] - mx) * (y[i] - my);
  return s / double(x.size() - 1);
}

double standard_error(const std::vector<double>& x) {
  return x.empty() ? 0 : std::sqrt(covariance(x, x) / double(x.size()));
}

PplSummary ppl_summary(const std::vector<double>& nll) {
  const double m = mean(nll);
  const double ppl = std::exp(m);
  return {int64_t(nll.size()), m, ppl, ppl * standard_error(nll)};
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p * double(values.size() - 1);
  const auto lo = std::size_t(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - double(lo)) * (values[hi] - values[lo]);
}

Summary summarize(const Scores& s) {
  Summary out{.ppl = ppl_summary(s.nll), .kl = std::nullopt};
  if (s.kld.empty()) return out;
  KlSummary kl;
  kl.mean_kld = mean(s.kld);
  kl.kld_err = standard_error(s.kld);
  kl.kld_p90 = percentile(s.kld, 0.90);
  kl.kld_p99 = percentile(s.kld, 0.99);
  kl.kld_max = *std::max_element(s.kld.begin(), s.kld.end());
  const double n = double(s.same_top.size());
  double same = 0;
  for (uint8_t v : s.same_top) same += v;
  kl.same_top = same / n;
  kl.same_top_err = n > 1 ? std::sqrt(kl.same_top * (1 - kl.same_top) / (n - 1)) : 0;
  kl.ref = ppl_summary(s.ref_nll);
  const double p = out.ppl.ppl, pr = kl.ref.ppl;
  kl.delta_ppl = p - pr;
  const double var = (p * p * covariance(s.nll, s.nll) + pr * pr * covariance(s.ref_nll, s.ref_nll) -
                      2 * p * pr * covariance(s.nll, s.ref_nll)) / n;
  kl.delta_ppl_err = std::sqrt(std::max(var, 0.0));
  out.kl = kl;
  return out;
}

}  // namespace trellis::eval
