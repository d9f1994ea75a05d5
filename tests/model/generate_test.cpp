// Generation on the fixture: greedy decoding from reference.json's prompt
// reproduces transformers' greedy continuation exactly, through the token
// API and through the Runner (tokenizer, streaming text); the greedy path's
// backend argmax is forward's logits' argmax; the pipelined greedy loop
// takes back the forward it launched ahead when a token stops it, and the
// session's launched forwards give forward_argmax's tokens. Sampling with
// top-k runs the same pipelined loop (Backend::choose_to_next): its tokens
// are those of sampling each whole row with the same seed, also across a
// stop and a continuation, and a declined choice is sampled from the row.
// A negative token count is an error before anything runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixture.hpp"
#include "support/sampled_rows.hpp"
#include "trellis/error.hpp"
#include "trellis/model/backend.hpp"
#include "trellis/model/generate.hpp"
#include "trellis/model/runner.hpp"
#include "trellis/model/sampling.hpp"

namespace trellis {
namespace {

TEST(Generate, GreedyReproducesTransformers) {
  const auto ref = test::fixture_reference();
  const auto prompt = ref["prompt_ids"].get<std::vector<int32_t>>();
  const auto greedy = ref["greedy_ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> expected(greedy.begin() + int64_t(prompt.size()), greedy.end());
  ASSERT_EQ(expected.size(), 48u);

  model::Session s(test::fixture_model(), 256);
  model::Sampler greedy_sampler({.temperature = 0});
  std::vector<int32_t> got;
  const auto stats = model::generate(s, prompt, int64_t(expected.size()), greedy_sampler, {}, [&](int32_t id) {
    got.push_back(id);
    return true;
  });
  EXPECT_EQ(got, expected);
  EXPECT_EQ(stats.prompt_tokens, int64_t(prompt.size()));
  EXPECT_EQ(stats.generated_tokens, 48);
  EXPECT_EQ(stats.decode_steps, 47);
  EXPECT_EQ(stats.stop, model::StopReason::length);
  EXPECT_EQ(s.position(), int64_t(prompt.size()) + 47);
}

// Greedy generation takes the backend's argmax (Session::forward_argmax): the
// same token as model::argmax of forward's logits, over batches of a prompt
// longer than max_batch and over a decode step.
TEST(Generate, ForwardArgmaxIsTheArgmaxOfTheLogits) {
  const auto prompt = test::fixture_reference()["greedy_ids"].get<std::vector<int32_t>>();
  ASSERT_GT(prompt.size(), 10u);
  model::Session batched(test::fixture_model(), 256, /*max_batch=*/5), whole(test::fixture_model(), 256);
  const int32_t first = batched.forward_argmax(prompt);
  EXPECT_EQ(first, model::argmax(whole.forward(prompt)));
  EXPECT_EQ(batched.position(), whole.position());
  const int32_t second = batched.forward_argmax(std::span(&first, 1));
  EXPECT_EQ(second, model::argmax(whole.forward(std::span(&first, 1))));
  EXPECT_EQ(batched.tokens(), whole.tokens());
}

TEST(Generate, RunnerStreamsTheGreedyText) {
  const auto ref = test::fixture_reference();
  model::Runner runner({.dir = test::kFixtureDir, .context = 128});
  const auto prompt = runner.encode_prompt(ref["prompt"].get<std::string>());
  EXPECT_EQ(prompt, ref["prompt_ids"].get<std::vector<int32_t>>());
  model::Sampler greedy({.temperature = 0});
  std::string text;
  runner.complete(prompt, 48, greedy, [&](std::string_view piece) { text += piece; });
  EXPECT_EQ(ref["prompt"].get<std::string>() + text, ref["greedy_text"].get<std::string>());
}

TEST(Generate, ContinuationReusesTheSharedPrefix) {
  model::Runner runner({.dir = test::kFixtureDir, .context = 128});
  model::Sampler greedy({.temperature = 0});
  const auto prompt = runner.encode_prompt("ROMEO:\n");
  std::string first, again;
  runner.complete(prompt, 8, greedy, [&](std::string_view p) { first += p; });
  // The same prompt again: all but its last token are reused, same output.
  const auto stats = runner.continue_with(prompt, 8, greedy, [&](std::string_view p) { again += p; });
  EXPECT_EQ(stats.prompt_tokens, 1);
  EXPECT_EQ(again, first);
}

TEST(Generate, StopsAtTheContext) {
  model::Session s(test::fixture_model(), 6);
  model::Sampler greedy({.temperature = 0});
  int64_t n = 0;
  const std::vector<int32_t> prompt = {827, 271};
  const auto stats = model::generate(s, prompt, 100, greedy, {}, [&](int32_t) { return ++n, true; });
  EXPECT_EQ(stats.stop, model::StopReason::context_full);
  EXPECT_EQ(s.position(), 6);
  EXPECT_EQ(stats.generated_tokens, 5);  // the 5th token is reported but has no room to run
}

TEST(Generate, NegativeTokenCountIsAnError) {
  model::Session s(test::fixture_model(), 16);
  model::Sampler greedy({.temperature = 0});
  const std::vector<int32_t> prompt = {827, 271};
  try {
    model::generate(s, prompt, -3, greedy, {}, [](int32_t) { return true; });
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "generate: max_new (the most tokens to generate) must be 0 or more, got -3");
  }
  EXPECT_EQ(s.position(), 0);  // nothing ran
}

TEST(Generate, StopTokenEndsWithoutReportingIt) {
  const auto ref = test::fixture_reference();
  const auto greedy_ids = ref["greedy_ids"].get<std::vector<int32_t>>();
  model::Session s(test::fixture_model(), 64);
  model::Sampler greedy({.temperature = 0});
  std::vector<int32_t> got;
  const std::vector<int32_t> stop = {greedy_ids[5]};  // the 4th generated token
  const auto stats = model::generate(s, std::span(greedy_ids).first(2), 20, greedy, stop, [&](int32_t id) {
    got.push_back(id);
    return true;
  });
  EXPECT_EQ(stats.stop, model::StopReason::stop_token);
  EXPECT_EQ(got, std::vector<int32_t>(greedy_ids.begin() + 2, greedy_ids.begin() + 5));
  // The forward launched ahead for the stop token is taken back: the session
  // holds the prompt and every reported token, as unpipelined.
  EXPECT_EQ(s.tokens(), std::vector<int32_t>(greedy_ids.begin(), greedy_ids.begin() + 5));
  EXPECT_EQ(stats.decode_steps, 3);
}

TEST(Generate, CallbackStopTakesBackTheForwardLaunchedAhead) {
  const auto greedy_ids = test::fixture_reference()["greedy_ids"].get<std::vector<int32_t>>();
  model::Session s(test::fixture_model(), 64);
  model::Sampler greedy({.temperature = 0});
  int64_t n = 0;
  const auto stats = model::generate(s, std::span(greedy_ids).first(2), 20, greedy, {}, [&](int32_t) { return ++n < 3; });
  EXPECT_EQ(stats.stop, model::StopReason::callback);
  EXPECT_EQ(stats.generated_tokens, 3);
  EXPECT_EQ(stats.decode_steps, 2);
  EXPECT_EQ(s.tokens(), std::vector<int32_t>(greedy_ids.begin(), greedy_ids.begin() + 4));
  // The session is usable again: the next forward follows on from there.
  EXPECT_EQ(s.forward_argmax(std::span(greedy_ids).subspan(4, 1)), greedy_ids[5]);
}

// Pipelined greedy decoding (Session::launch_next): the tokens of
// forward_argmax, each position holding kNextToken until its token is taken.
TEST(Generate, LaunchedForwardsGiveForwardArgmaxTokens) {
  const auto greedy_ids = test::fixture_reference()["greedy_ids"].get<std::vector<int32_t>>();
  model::Session s(test::fixture_model(), 64);
  const auto prompt = std::span(greedy_ids).first(3);
  s.launch(prompt);
  s.launch_next();
  EXPECT_EQ(s.tokens().back(), model::Backend::kNextToken);
  EXPECT_EQ(s.take_token(), greedy_ids[3]);
  EXPECT_EQ(s.tokens().back(), greedy_ids[3]);
  s.launch_next();
  EXPECT_EQ(s.take_token(), greedy_ids[4]);
  EXPECT_EQ(s.take_token(), greedy_ids[5]);
  s.launch_next();  // every token taken: the newest goes in from the host
  EXPECT_EQ(s.take_token(), greedy_ids[6]);
  EXPECT_EQ(s.tokens(), std::vector<int32_t>(greedy_ids.begin(), greedy_ids.begin() + 6));
}

TEST(GenerateSampled, PipelinedSamplingIsSamplingEachRow) {
  const auto prompt = test::fixture_reference()["prompt_ids"].get<std::vector<int32_t>>();
  const model::SamplingParams params{.seed = 11};
  model::Session s(test::fixture_model(), 256);
  model::Sampler sampler(params);
  ASSERT_GT(sampler.top_count(s.vocab()), 0);
  std::vector<int32_t> got;
  const auto stats = model::generate(s, prompt, 40, sampler, {}, [&](int32_t id) { return got.push_back(id), true; });
  EXPECT_EQ(got, test::sampled_rows(test::fixture_model(), prompt, params, 40));
  EXPECT_EQ(stats.decode_steps, 39);
}

// A stop takes back the forward launched ahead and gives its draw back: a
// continuation in the same session with the same sampler goes on as one run.
TEST(GenerateSampled, StopAndContinueIsOneRun) {
  const auto prompt = test::fixture_reference()["prompt_ids"].get<std::vector<int32_t>>();
  const model::SamplingParams params{.seed = 5};
  const auto want = test::sampled_rows(test::fixture_model(), prompt, params, 12);
  model::Session s(test::fixture_model(), 256);
  model::Sampler sampler(params);
  std::vector<int32_t> got;
  model::generate(s, prompt, 40, sampler, {}, [&](int32_t id) { return got.push_back(id), got.size() < 5; });
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(s.position(), int64_t(prompt.size() + 4));
  const int32_t last = got.back();
  model::generate(s, std::span(&last, 1), 7, sampler, {}, [&](int32_t id) { return got.push_back(id), true; });
  EXPECT_EQ(got, want);
}

// A choice that declines: take_token gives kDeclined, and resample_declined
// takes back the forward launched after it and samples the declined row.
TEST(GenerateSampled, DeclinedChoiceIsSampledFromTheRow) {
  const auto prompt = test::fixture_reference()["prompt_ids"].get<std::vector<int32_t>>();
  const model::SamplingParams params{.seed = 3};
  const auto want = test::sampled_rows(test::fixture_model(), prompt, params, 3);
  model::Sampler sampler(params);
  model::Session s(test::fixture_model(), 256);
  const int count = sampler.top_count(s.vocab());
  // A choice declines where no more than top_k of the largest logits come.
  const auto choice = [&](double u, bool decline) {
    return model::NextToken{decline ? params.top_k : count, model::top_choice_params(params), u};
  };
  const double u1 = sampler.draw();
  s.launch(prompt, choice(u1, false));
  const double u2 = sampler.draw();
  s.launch_next(choice(u2, true));
  const double u3 = sampler.draw();
  s.launch_next(choice(u3, false));
  EXPECT_EQ(s.take_token(), want[0]);
  ASSERT_EQ(s.take_token(), model::Backend::kDeclined);
  std::vector<float> logits;
  const int32_t second = s.resample_declined([&](std::span<const float> row) {
    logits.assign(row.begin(), row.end());
    return sampler.sample(logits, s.tokens(), u2);
  });
  EXPECT_EQ(second, want[1]);
  EXPECT_EQ(s.position(), int64_t(prompt.size() + 1));
  s.launch_next(choice(u3, false));
  EXPECT_EQ(s.take_token(), want[2]);
  std::vector<int32_t> fed(prompt.begin(), prompt.end());
  fed.insert(fed.end(), want.begin(), want.begin() + 2);
  EXPECT_EQ(s.tokens(), fed);
}

}  // namespace
}  // namespace trellis
