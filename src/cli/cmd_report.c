// cli/cmd_report.c — `frontier report RUN_DIR [--out FILE]`: one self-contained HTML page (inline
// CSS and SVG, no JavaScript, no network) with the run's summary, loss, schedules, throughput,
// budget use, kernel profile and roofline (when profile.csv is there), config and hardware.
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "report/report.h"
#include "util/error.h"
#include "util/fileio.h"

int cmd_report(int argc, char **argv) {
    const char *out = NULL;
    Option opts[] = {
        {"out", OPT_STRING, &out, "FILE", "where to write the page (default: RUN_DIR/report.html)", 0, 0, 0, 0, NULL},
        {0},
    };
    StringList pos = {0};
    const char *usage = "frontier report RUN_DIR [--out FILE]";
    int rc = args_parse_one(usage,
                        "Write a self-contained HTML report of a training run folder (inline CSS + SVG, no JavaScript, "
                        "no network): summary, training loss with val_bpb, LR and Muon momentum schedules, tok/s with "
                        "the excluded steps, budget use, and -- when the folder has profile.csv (`frontier profile`) -- "
                        "the kernel breakdown and a roofline; then the config and hardware. Reads metrics.jsonl, "
                        "summary.json and config.json (required), profile.csv and roofline.json (optional). The file "
                        "is written atomically: on any error nothing is left behind.",
                        opts, argc, argv, "RUN_DIR", &pos);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE;
    if (out && (!*out || is_dir(out))) {
        err_usage("--out %s: %s", out, *out ? "is a folder: give the page's file name" : "empty: give a file name");
        string_list_free(&pos);
        return report_error();
    }
    const char *run_dir = pos.items[0];
    char *path = out ? NULL : path_join(run_dir, "report.html");
    const char *dest = out ? out : path;
    rc = report_write(run_dir, dest);
    if (rc == 0) printf("report %s\n", dest);
    free(path);
    string_list_free(&pos);
    return rc == 0 ? 0 : report_error();
}
