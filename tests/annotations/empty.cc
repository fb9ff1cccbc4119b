// Keeps dlprof_annot_dump non-empty once dlprof_dump_lib holds stacks.cc and regions.cc.
