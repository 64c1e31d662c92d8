// The state-dict pickle interpreter (see state_pickle.h). Values live in an arena owned by one
// read, referenced by plain pointers: a pickle can make a list hold itself (memo + APPEND), and
// reference counting would leak such a cycle.
#include "model/state_pickle.h"

#include "model/pickle_scan.h"

#include <limits>
#include <memory>
#include <set>
#include <unordered_map>

#include "core/text.h"

namespace dl::model {
namespace {

// The callables a REDUCE may apply: each builds data and nothing else.
enum class Callable {
  kNone,
  kOrderedDict,       // collections.OrderedDict()
  kRebuildTensor,     // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
  kRebuildParameter,  // torch._utils._rebuild_parameter(tensor, requires_grad, hooks)
  kRestoreTypeTag,    // torch.jit._pickle.restore_type_tag(value, type): LibTorch's typed dicts
  kBuildList,         // torch.jit._pickle.build_intlist(list) and its kin
  kStorageType,       // torch.FloatStorage, ...: only named in a storage's persistent id
};

struct Value {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kStorage,
    kTensor
  };
  Kind kind = Kind::kNone;
  std::int64_t integer = 0;                        // kBool, kInt
  std::string text;                                // kString; kGlobal: "module.name"
  std::vector<Value*> items;                       // kTuple, kList
  std::vector<std::pair<Value*, Value*>> entries;  // kDict
  Callable callable = Callable::kNone;             // kGlobal
  StorageType storage_type = StorageType::kFloat;  // kGlobal of a storage type
  TensorRecord tensor;                             // kStorage (key, type, numel), kTensor
};

const char* kind_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return "a bool";
    case Value::Kind::kInt:
      return "an int";
    case Value::Kind::kFloat:
      return "a float";
    case Value::Kind::kString:
      return "a str";
    case Value::Kind::kTuple:
      return "a tuple";
    case Value::Kind::kList:
      return "a list";
    case Value::Kind::kDict:
      return "a dict";
    case Value::Kind::kGlobal:
      return "a class or function";
    case Value::Kind::kStorage:
      return "a storage";
    case Value::Kind::kTensor:
      return "a tensor";
  }
  return "a value";
}

[[noreturn]] void refuse(const std::string& why) {
  throw StateDictError(why);
}

struct Global {
  const char* name;
  Callable callable;
  StorageType storage = StorageType::kFloat;
};

// Everything a weights file may name. The storage classes are what torch.save writes in 1.x and
// 2.x alike (2.x's untyped storages are saved under their typed names).
const Global kGlobals[] = {
    {"collections.OrderedDict", Callable::kOrderedDict},
    {"torch._utils._rebuild_tensor_v2", Callable::kRebuildTensor},
    {"torch._utils._rebuild_parameter", Callable::kRebuildParameter},
    {"torch.jit._pickle.restore_type_tag", Callable::kRestoreTypeTag},
    {"torch.jit._pickle.build_intlist", Callable::kBuildList},
    {"torch.jit._pickle.build_doublelist", Callable::kBuildList},
    {"torch.jit._pickle.build_boollist", Callable::kBuildList},
    {"torch.jit._pickle.build_tensorlist", Callable::kBuildList},
    {"torch.FloatStorage", Callable::kStorageType, StorageType::kFloat},
    {"torch.DoubleStorage", Callable::kStorageType, StorageType::kDouble},
    {"torch.HalfStorage", Callable::kStorageType, StorageType::kHalf},
    {"torch.BFloat16Storage", Callable::kStorageType, StorageType::kBFloat16},
    {"torch.LongStorage", Callable::kStorageType, StorageType::kLong},
    {"torch.IntStorage", Callable::kStorageType, StorageType::kInt},
    {"torch.ShortStorage", Callable::kStorageType, StorageType::kShort},
    {"torch.CharStorage", Callable::kStorageType, StorageType::kChar},
    {"torch.ByteStorage", Callable::kStorageType, StorageType::kByte},
    {"torch.BoolStorage", Callable::kStorageType, StorageType::kBool},
};

// Printable for a message: the name as given, cut short, non-printing bytes as '?'.
std::string printable(const std::string& text, std::size_t limit = 60) {
  return dl::printable(text, limit);
}

class Interpreter {
 public:
  Interpreter(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  Value* run() {
    if (const std::string flaw = pickle_flaw(data_, size_); !flaw.empty()) {
      refuse("the pickle is truncated or corrupt: " + flaw);
    }
    while (true) {
      if (pos_ >= size_) refuse("the pickle ends without its STOP opcode");
      at_ = pos_;
      const std::uint8_t op = data_[pos_++];
      if (op == '.') break;
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty()) {
      refuse("the pickle leaves " + std::to_string(stack_.size()) + " values on its stack, not 1");
    }
    return stack_.back();
  }

 private:
  Value* make(Value::Kind kind) {
    arena_.push_back(std::make_unique<Value>());
    arena_.back()->kind = kind;
    return arena_.back().get();
  }

  void push(Value* v) { stack_.push_back(v); }

  Value* pop() {
    if (stack_.size() <= floor()) bad("pops an empty stack");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }

  Value* top() {
    if (stack_.size() <= floor()) bad("reads an empty stack");
    return stack_.back();
  }

  // Values above the innermost MARK belong to it; below it they are out of reach.
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  // The values pushed since the innermost MARK, which is removed.
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) bad("has no MARK to close");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  [[noreturn]] void bad(const std::string& what) const {
    refuse("the pickle's opcode at byte " + std::to_string(at_) + " " + what);
  }

  const std::uint8_t* take(std::size_t n) {
    if (n > size_ - pos_) bad("runs past the end");
    const std::uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

  std::uint64_t little(std::size_t n) {
    const std::uint8_t* p = take(n);
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = (v << 8) | p[k];
    return v;
  }

  std::string line() {
    const std::size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != '\n') ++pos_;
    if (pos_ == size_) bad("has a line without its newline");
    return std::string(reinterpret_cast<const char*>(data_ + start), pos_++ - start);
  }

  std::string bytes(std::size_t n) {
    const std::uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }

  void memo_put(std::uint64_t index) {
    if (index > std::numeric_limits<std::uint32_t>::max()) bad("memoizes past 2^32");
    memo_[static_cast<std::uint32_t>(index)] = top();
  }

  void memo_get(std::uint64_t index) {
    const auto found = memo_.find(static_cast<std::uint32_t>(index));
    if (index > std::numeric_limits<std::uint32_t>::max() || found == memo_.end()) {
      bad("reads memo entry " + std::to_string(index) + ", which was never stored");
    }
    push(found->second);
  }

  Value* integer(std::int64_t v) {
    Value* out = make(Value::Kind::kInt);
    out->integer = v;
    return out;
  }

  Value* string(std::string text) {
    Value* out = make(Value::Kind::kString);
    out->text = std::move(text);
    return out;
  }

  Value* tuple(std::vector<Value*> items) {
    Value* out = make(Value::Kind::kTuple);
    out->items = std::move(items);
    return out;
  }

  void global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    for (const Global& g : kGlobals) {
      if (full == g.name) {
        Value* v = make(Value::Kind::kGlobal);
        v->text = full;
        v->callable = g.callable;
        v->storage_type = g.storage;
        push(v);
        return;
      }
    }
    refuse("the pickle names the global " + printable(full) +
           ", which a weights file has no use for (refused, not run)");
  }

  Value* dict_of(Value* target, const char* op) {
    if (target->kind != Value::Kind::kDict) bad(std::string(op) + " on " + kind_name(*target));
    return target;
  }

  // Protocol, frames, globals, the memo and MARK: false for another opcode.
  bool control(std::uint8_t op) {
    switch (op) {
      case 0x80:  // PROTO
        take(1);
        break;
      case 0x95:  // FRAME: a hint for buffered readers
        take(8);
        break;
      case 'c': {  // GLOBAL
        const std::string module = line();
        global(module, line());
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Value* name = pop();
        Value* module = pop();
        if (name->kind != Value::Kind::kString || module->kind != Value::Kind::kString) {
          bad("STACK_GLOBAL needs two strings");
        }
        global(module->text, name->text);
        break;
      }
      case 'q':  // BINPUT
        memo_put(little(1));
        break;
      case 'r':  // LONG_BINPUT
        memo_put(little(4));
        break;
      case 0x94:  // MEMOIZE
        memo_put(memo_.size());
        break;
      case 'h':  // BINGET
        memo_get(little(1));
        break;
      case 'j':  // LONG_BINGET
        memo_get(little(4));
        break;
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      default:
        return false;
    }
    return true;
  }

  // A value pushed from the program's own bytes (empty containers, numbers, strings): false for
  // another opcode.
  bool constant(std::uint8_t op) {
    switch (op) {
      case '}':  // EMPTY_DICT
        push(make(Value::Kind::kDict));
        break;
      case ']':  // EMPTY_LIST
        push(make(Value::Kind::kList));
        break;
      case ')':  // EMPTY_TUPLE
        push(tuple({}));
        break;
      case 'J':  // BININT: signed 4 bytes
        push(integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4)))));
        break;
      case 'K':  // BININT1
        push(integer(static_cast<std::int64_t>(little(1))));
        break;
      case 'M':  // BININT2
        push(integer(static_cast<std::int64_t>(little(2))));
        break;
      case 0x8a: {  // LONG1: little-endian two's complement of up to 8 bytes here
        const std::size_t n = static_cast<std::size_t>(little(1));
        if (n > 8) bad("holds an integer wider than 64 bits");
        std::uint64_t v = n == 0 ? 0 : little(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~std::uint64_t{0} << (8 * n);
        push(integer(static_cast<std::int64_t>(v)));
        break;
      }
      case 'G':  // BINFLOAT: its value does not matter to a state dict
        take(8);
        push(make(Value::Kind::kFloat));
        break;
      case 0x88:    // NEWTRUE
      case 0x89: {  // NEWFALSE
        Value* v = make(Value::Kind::kBool);
        v->integer = op == 0x88 ? 1 : 0;
        push(v);
        break;
      }
      case 'N':  // NONE
        push(make(Value::Kind::kNone));
        break;
      case 'X':  // BINUNICODE
        push(string(bytes(static_cast<std::size_t>(little(4)))));
        break;
      case 0x8c:  // SHORT_BINUNICODE
        push(string(bytes(static_cast<std::size_t>(little(1)))));
        break;
      default:
        return false;
    }
    return true;
  }

  // A value made of values on the stack (tuples, items, REDUCE, BUILD, BINPERSID): false for
  // another opcode.
  bool combine(std::uint8_t op) {
    switch (op) {
      case 't':  // TUPLE
        push(tuple(pop_mark()));
        break;
      case 0x85:    // TUPLE1
      case 0x86:    // TUPLE2
      case 0x87: {  // TUPLE3
        std::vector<Value*> items(op - 0x84);
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        push(tuple(std::move(items)));
        break;
      }
      case 's': {  // SETITEM
        Value* value = pop();
        Value* key = pop();
        dict_of(top(), "SETITEM")->entries.emplace_back(key, value);
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Value*> items = pop_mark();
        if (items.size() % 2 != 0) bad("SETITEMS has an odd number of values");
        Value* dict = dict_of(top(), "SETITEMS");
        for (std::size_t k = 0; k < items.size(); k += 2) {
          dict->entries.emplace_back(items[k], items[k + 1]);
        }
        break;
      }
      case 'a': {  // APPEND
        Value* item = pop();
        Value* list = top();
        if (list->kind != Value::Kind::kList) bad(std::string("APPEND on ") + kind_name(*list));
        list->items.push_back(item);
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Value*> items = pop_mark();
        Value* list = top();
        if (list->kind != Value::Kind::kList) bad(std::string("APPENDS on ") + kind_name(*list));
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case 'R': {  // REDUCE
        Value* args = pop();
        Value* callable = pop();
        push(reduce(*callable, *args));
        break;
      }
      case 'b': {  // BUILD: an OrderedDict's attributes (state_dict()'s _metadata) are not needed
        Value* state = pop();
        (void)state;
        Value* target = top();
        if (target->kind != Value::Kind::kDict) bad(std::string("BUILD on ") + kind_name(*target));
        break;
      }
      case 'Q': {  // BINPERSID
        push(persistent(*pop()));
        break;
      }
      default:
        return false;
    }
    return true;
  }

  void step(std::uint8_t op) {
    if (control(op) || constant(op) || combine(op)) return;
    refuse("the pickle's opcode 0x" + hex(op) + " at byte " + std::to_string(at_) +
           " is not one a weights file uses (refused)");
  }

  static std::string hex(std::uint8_t op) {
    const char* digits = "0123456789abcdef";
    return std::string{digits[op >> 4], digits[op & 15]};
  }

  // torch.save's persistent id of a storage: ('storage', torch.XStorage, key, location, numel).
  Value* persistent(const Value& pid) {
    const auto& t = pid.items;
    if (pid.kind != Value::Kind::kTuple || t.size() != 5 || t[0]->kind != Value::Kind::kString ||
        t[0]->text != "storage" || t[1]->kind != Value::Kind::kGlobal ||
        t[1]->callable != Callable::kStorageType || t[2]->kind != Value::Kind::kString ||
        t[4]->kind != Value::Kind::kInt || t[4]->integer < 0) {
      bad("BINPERSID: expected a storage's id ('storage', type, key, location, size)");
    }
    Value* storage = make(Value::Kind::kStorage);
    storage->tensor.storage_key = t[2]->text;
    storage->tensor.type = t[1]->storage_type;
    storage->tensor.storage_numel = static_cast<std::uint64_t>(t[4]->integer);
    return storage;
  }

  std::vector<std::int64_t> ints(const Value& v, const char* what) {
    if (v.kind != Value::Kind::kTuple && v.kind != Value::Kind::kList) {
      bad(std::string("REDUCE: a tensor's ") + what + " is " + kind_name(v) + ", not a tuple");
    }
    std::vector<std::int64_t> out;
    for (const Value* item : v.items) {
      if (item->kind != Value::Kind::kInt || item->integer < 0) {
        bad(std::string("REDUCE: a tensor's ") + what + " holds " + kind_name(*item) +
            ", not a whole number >= 0");
      }
      out.push_back(item->integer);
    }
    return out;
  }

  Value* reduce(const Value& callable, const Value& args) {
    if (callable.kind != Value::Kind::kGlobal) bad("REDUCE calls something that is not a global");
    if (args.kind != Value::Kind::kTuple) bad("REDUCE's arguments are not a tuple");
    const auto& a = args.items;
    switch (callable.callable) {
      case Callable::kOrderedDict:
        if (!a.empty()) bad("REDUCE: OrderedDict with arguments");
        return make(Value::Kind::kDict);
      case Callable::kRebuildTensor: {
        if (a.size() < 6 || a.size() > 7 || a[0]->kind != Value::Kind::kStorage ||
            a[1]->kind != Value::Kind::kInt || a[1]->integer < 0) {
          bad("REDUCE: _rebuild_tensor_v2 needs (storage, offset, size, stride, ...)");
        }
        Value* tensor = make(Value::Kind::kTensor);
        tensor->tensor = a[0]->tensor;
        tensor->tensor.offset = static_cast<std::uint64_t>(a[1]->integer);
        tensor->tensor.sizes = ints(*a[2], "size");
        tensor->tensor.strides = ints(*a[3], "stride");
        check_view(tensor->tensor);
        return tensor;
      }
      case Callable::kRebuildParameter:
        if (a.size() != 3 || a[0]->kind != Value::Kind::kTensor) {
          bad("REDUCE: _rebuild_parameter needs (tensor, requires_grad, hooks)");
        }
        return a[0];
      case Callable::kRestoreTypeTag:
        if (a.size() != 2) bad("REDUCE: restore_type_tag needs (value, type)");
        return a[0];
      case Callable::kBuildList:
        if (a.size() != 1 || a[0]->kind != Value::Kind::kList) {
          bad("REDUCE: a list builder needs (list,)");
        }
        return a[0];
      case Callable::kStorageType:
      case Callable::kNone:
        break;
    }
    bad("REDUCE calls " + printable(callable.text) + ", which builds nothing here");
  }

  // The view's elements lie within the storage: offset + sum((size - 1) * stride) < numel, for
  // a view that has elements, computed without overflow.
  void check_view(const TensorRecord& t) const {
    if (t.sizes.size() != t.strides.size())
      bad("REDUCE: a tensor's size and stride differ in rank");
    if (t.sizes.size() > 16) bad("REDUCE: a tensor of more than 16 dimensions");
    constexpr std::uint64_t kMax = std::uint64_t{1} << 62;
    std::uint64_t numel = 1;
    std::uint64_t last = t.offset;
    for (std::size_t d = 0; d < t.sizes.size(); ++d) {
      const auto size = static_cast<std::uint64_t>(t.sizes[d]);
      const auto stride = static_cast<std::uint64_t>(t.strides[d]);
      if (size == 0) return;  // no elements: any offset will do
      if (size > kMax / numel) bad("REDUCE: a tensor of more than 2^62 elements");
      numel *= size;
      if (stride != 0 && size - 1 > (kMax - last) / stride)
        bad("REDUCE: a tensor's view overflows");
      last += (size - 1) * stride;
    }
    if (last >= t.storage_numel) {
      bad("REDUCE: a tensor's view reaches element " + std::to_string(last) + " of a storage of " +
          std::to_string(t.storage_numel));
    }
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::size_t at_ = 0;  // the current opcode's offset, for messages
  std::vector<std::unique_ptr<Value>> arena_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint32_t, Value*> memo_;
};

// The tensors of a dict that is a state dict ("" when it holds none).
std::vector<std::pair<std::string, TensorRecord>> tensors_of(const Value& dict) {
  std::vector<std::pair<std::string, TensorRecord>> out;
  std::set<std::string> seen;
  for (const auto& [key, value] : dict.entries) {
    if (key->kind != Value::Kind::kString || value->kind != Value::Kind::kTensor) continue;
    if (!seen.insert(key->text).second) {
      refuse("the state dict names '" + printable(key->text) + "' twice");
    }
    out.emplace_back(key->text, value->tensor);
  }
  return out;
}

std::string some_keys(const Value& dict) {
  std::string out;
  std::size_t shown = 0;
  for (const auto& entry : dict.entries) {
    if (shown == 5) return out + ", ...";
    const Value& key = *entry.first;
    out += (shown++ == 0 ? "" : ", ") + (key.kind == Value::Kind::kString
                                             ? "'" + printable(key.text, 40) + "'"
                                             : std::string(kind_name(key)));
  }
  return out;
}

}  // namespace

std::size_t element_size(StorageType type) {
  switch (type) {
    case StorageType::kDouble:
    case StorageType::kLong:
      return 8;
    case StorageType::kFloat:
    case StorageType::kInt:
      return 4;
    case StorageType::kHalf:
    case StorageType::kBFloat16:
    case StorageType::kShort:
      return 2;
    case StorageType::kChar:
    case StorageType::kByte:
    case StorageType::kBool:
      return 1;
  }
  return 1;
}

PickledStateDict read_state_dict_pickle(const std::uint8_t* data, std::size_t size) {
  Interpreter interpreter(data, size);
  const Value* root = interpreter.run();
  if (root->kind != Value::Kind::kDict) {
    refuse(std::string("the file holds ") + kind_name(*root) + ", not a dict of tensors");
  }
  PickledStateDict out;
  for (const char* key : {"model_state_dict", "state_dict", "model"}) {
    for (const auto& [k, v] : root->entries) {
      if (k->kind == Value::Kind::kString && k->text == key && v->kind == Value::Kind::kDict) {
        out.tensors = tensors_of(*v);
        out.found_under = key;
        if (out.tensors.empty()) {
          refuse(std::string("its '") + key + "' entry holds no tensors");
        }
        return out;
      }
    }
  }
  out.tensors = tensors_of(*root);
  if (out.tensors.empty()) {
    refuse(root->entries.empty()
               ? "the file holds an empty dict"
               : "the file holds a dict without tensors (keys " + some_keys(*root) +
                     ") and no 'model_state_dict', 'state_dict' or 'model'");
  }
  return out;
}

}  // namespace dl::model
