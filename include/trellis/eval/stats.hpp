// Summaries of per-prediction scores, llama-perplexity's conventions.
//
// For a sample x_1 … x_n: mean x̄ = Σx/n, standard error se(x̄) = sqrt(s²/n),
// s² = Σ(x − x̄)²/(n − 1) (two passes, double); cov likewise.
//   PPL      = exp(mean nll)            ± PPL · se(nll)        (delta method)
//   mean KLD                            ± se(kld)
//   KLD p90, p99: linear interpolation between order statistics at rank p·(n − 1)
//   same top p = mean of same_top       ± sqrt(p(1 − p)/(n − 1))
//   ΔPPL     = PPL − PPL_ref            ± sqrt(PPL² se² + PPL_ref² se_ref² − 2 PPL PPL_ref cov/n)
//              (the two NLL means are correlated: same tokens)
// n < 2 leaves the uncertainties at 0.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace trellis::eval {

// Every prediction's scores, in window order; the ref_* and kld vectors are
// empty without a reference.
struct Scores {
  std::vector<double> nll;
  std::vector<double> ref_nll;
  std::vector<double> kld;
  std::vector<uint8_t> same_top;
};

struct PplSummary {
  int64_t predictions = 0;
  double mean_nll = 0;
  double ppl = 0;
  double ppl_err = 0;
};

struct KlSummary {
  double mean_kld = 0;
  double kld_err = 0;
  double kld_p90 = 0;
  double kld_p99 = 0;
  double kld_max = 0;
  double same_top = 0;
  double same_top_err = 0;
  PplSummary ref;
  double delta_ppl = 0;
  double delta_ppl_err = 0;
};

struct Summary {
  PplSummary ppl;
  std::optional<KlSummary> kl;  // with a reference
};

Summary summarize(const Scores& scores);

// The p-quantile (0 ≤ p ≤ 1) of `values` by the interpolation above; 0 when empty.
double percentile(std::vector<double> values, double p);

}  // namespace trellis::eval
