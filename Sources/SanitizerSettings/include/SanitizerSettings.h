#ifndef SESSIONKEEPER_SANITIZER_SETTINGS_H
#define SESSIONKEEPER_SANITIZER_SETTINGS_H
/* Nothing to import: this target only carries settings that the sanitizers' runtimes look up by name
 * (sanitizer_settings.c). */
#endif
