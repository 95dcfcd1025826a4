// A minimal test harness for the portable C++ (GoogleTest is not on CI's machine): TEST(name)
// registers a case, CHECK* record failures with file, line and both values, main runs all.
#ifndef CUSTOM_OPS_TESTS_HOST_CHECK_H
#define CUSTOM_OPS_TESTS_HOST_CHECK_H

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace check {

struct Case {
    const char *name;
    std::function<void()> body;
};

inline std::vector<Case> &Registry()
{
    static std::vector<Case> cases;
    return cases;
}

inline int &Failures()
{
    static int failures = 0;
    return failures;
}

struct Register {
    Register(const char *name, std::function<void()> body) { Registry().push_back({name, std::move(body)}); }
};

template <typename A, typename B>
void Equal(const A &a, const B &b, const char *as, const char *bs, const char *file, int line)
{
    if (!(a == b)) {
        std::ostringstream os;
        os << file << ":" << line << ": CHECK_EQ(" << as << ", " << bs << ") failed: " << a << " != " << b;
        std::fprintf(stderr, "%s\n", os.str().c_str());
        ++Failures();
    }
}

inline void True(bool ok, const char *expr, const std::string &note, const char *file, int line)
{
    if (!ok) {
        std::fprintf(stderr, "%s:%d: CHECK(%s) failed %s\n", file, line, expr, note.c_str());
        ++Failures();
    }
}

}  // namespace check

#define CHECK_CAT2(a, b) a##b
#define CHECK_CAT(a, b) CHECK_CAT2(a, b)
#define TEST(name)                                                                  \
    static void name();                                                             \
    static check::Register CHECK_CAT(reg_, name)(#name, name);                      \
    static void name()
#define CHECK_EQ(a, b) check::Equal((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK(expr) check::True((expr), #expr, "", __FILE__, __LINE__)
#define CHECK_MSG(expr, note) check::True((expr), #expr, (note), __FILE__, __LINE__)

#endif  // CUSTOM_OPS_TESTS_HOST_CHECK_H
