#include "check.h"

int main()
{
    for (const check::Case &c : check::Registry()) {
        const int before = check::Failures();
        c.body();
        std::printf("%s %s\n", check::Failures() == before ? "PASS" : "FAIL", c.name);
    }
    return check::Failures() == 0 ? 0 : 1;
}
