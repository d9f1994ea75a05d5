// The filters, tests, global functions and methods the chat-template
// interpreter knows. The parser asks is_filter/is_test/is_function so an
// unknown name is an error at load time, not at render time.
//   filters:   trim length count tojson([indent]) upper lower default d join
//              first last string int float items list reverse replace
//              capitalize title safe select reject selectattr rejectattr
//   tests:     defined undefined none string number integer float boolean true
//              false mapping sequence iterable equalto eq ne odd even
//   functions: raise_exception namespace range
//   methods:   strings: startswith endswith strip lstrip rstrip split upper
//              lower replace title capitalize; dicts: get items keys values
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "jinja_value.hpp"

namespace trellis::tokenizer::jinja {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

bool is_filter(const std::string& name);
bool is_test(const std::string& name);
bool is_function(const std::string& name);

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args);
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);
Value call_function(const std::string& name, const CallArgs& args);
Value call_method(const Value& object, const std::string& method, const CallArgs& args);

}  // namespace trellis::tokenizer::jinja
