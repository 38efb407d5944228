// docs/extending.md stays true to the tables it sends a reader to: every
// model kind (aha_kinds) has a tiny fixture whose config.json names it and is
// named on the page; every routing policy (aha_policies) is named on the page
// and run by a test: a grid policy in tests/test_frontier.py's grid
// (POLICIES), the others through --route in some test.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "doc_page.h"
#include "model_config_rows.h"
#include "trace_policy.h"

#define PAGE "docs/extending.md"
#define TINY "tests/fixtures/tiny"

// Whether some fixture folder's config.json says "model_type": "type".
static int has_fixture(const char *type) {
    DIR *d = opendir(TINY);
    char want[96];
    snprintf(want, sizeof want, "\"model_type\": \"%s\"", type);
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        char path[512];
        snprintf(path, sizeof path, TINY "/%s/config.json", e->d_name);
        char *cfg = doc_slurp(path);
        // the outer model_type of a multimodal config comes last, after its text_config's
        const char *at = cfg ? strstr(cfg, want) : NULL;
        while (at && strstr(at + 1, want)) at = strstr(at + 1, want);
        found = at && (strcmp(type, "gemma3") != 0 || strstr(cfg, "\"text_config\""));
        free(cfg);
    }
    if (d) closedir(d);
    return found;
}

// "`name`" on the page.
static int named(const char *page, const char *name) {
    char q[96];
    snprintf(q, sizeof q, "`%s`", name);
    return strstr(page, q) != NULL;
}

// Whether a test under tests/ runs --route name.
static int routed_by_a_test(const char *name) {
    static const char *const tests[] = {"tests/test_record.py", "tests/test_report.py", "tests/test_frontier.py",
                                        "tests/test_device.py", "tests/test_info.py", "tests/test_cli.sh"};
    char a[96], b[96];
    snprintf(a, sizeof a, "\"--route\", \"%s", name);
    snprintf(b, sizeof b, "--route %s", name);
    int found = 0;
    for (size_t i = 0; i < sizeof tests / sizeof *tests && !found; i++) {
        char *s = doc_slurp(tests[i]);
        found = s && (strstr(s, a) || strstr(s, b));
        free(s);
    }
    return found;
}

int main(void) {
    char *page = doc_slurp(PAGE), *grid = doc_slurp("tests/test_frontier.py");
    const char *pol = grid ? strstr(grid, "\nPOLICIES = \"") : NULL;
    TEST("extending.md: every model kind has a tiny fixture and is named on the page", {
        CHECK(page, "%s: cannot read", PAGE);
        for (int k = 0; page && k < AHA_N_KINDS; k++) {
            const char *type = aha_kinds[k].model_type;
            if (!type) continue;
            CHECK(has_fixture(type), "model kind %s: no fixture under " TINY " whose config.json names it", type);
            CHECK(named(page, type), "model kind %s: not named in " PAGE, type);
        }
    });
    TEST("extending.md: every routing policy is named on the page and run by a test", {
        CHECK(pol, "tests/test_frontier.py: no POLICIES line (its grid)");
        for (int k = 0; page && pol && k < AHA_ROUTER_COUNT; k++) {
            const aha_policy_traits *p = &aha_policies[k];
            CHECK(named(page, p->name), "policy %s: not named in " PAGE, p->name);
            if (p->letter) {
                char word[64];
                const char *end = strchr(pol + 13, '"');
                snprintf(word, sizeof word, "%s", p->name);
                const char *at = strstr(pol + 13, word);
                CHECK(at && end && at < end, "grid policy %s: not in tests/test_frontier.py's POLICIES", p->name);
            } else {
                CHECK(routed_by_a_test(p->name), "policy %s: no test runs --route %s", p->name, p->name);
            }
        }
    });
    free(page);
    free(grid);
    TEST_EXIT();
}
