/* placeholder: being written */
typedef int kgs_placeholder_t;
