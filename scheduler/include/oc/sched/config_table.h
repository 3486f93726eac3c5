#pragma once
// The [scheduler] config table (oc/common/config_table.h): one row per key of
// SchedulerOptions. ApplyConfig (options.h) reads it; oc-conf-gen writes the shipped conf files
// from it (docs/decisions/config-tables.md). Thread safety: built on first use, then only read.

#include "oc/common/config_table.h"
#include "oc/sched/options.h"

namespace oc::sched {

const ConfigTable<SchedulerOptions>& SchedulerConfigTable();

}  // namespace oc::sched
