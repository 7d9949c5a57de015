#ifndef CXML2_SHIM_H
#define CXML2_SHIM_H
/* Debian builds libxml2 with ICU, whose headers clash with the copy of ICU inside Foundation
 * ("'UErrorCode' has different definitions in different modules"). Nothing here touches the ICU members
 * of xmlCharEncodingHandler (only ever used through pointers), so the ICU part of the headers is skipped. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

/* libxml2 prints parser and XPath errors to stderr through per-thread handlers. XMLQuery reads errors from
 * the returned structures instead, so these handlers swallow them. */
static void cxml2_ignore_structured_error(void *user_data, xmlErrorPtr error) {
    (void)user_data;
    (void)error;
}

static void cxml2_ignore_generic_error(void *user_data, const char *message, ...) {
    (void)user_data;
    (void)message;
}

/* The handlers are thread-local in libxml2: called at the start of every XMLQuery entry point, on the
 * thread that then does the work. */
static inline void cxml2_silence_errors(void) {
    xmlSetStructuredErrorFunc(NULL, cxml2_ignore_structured_error);
    xmlSetGenericErrorFunc(NULL, cxml2_ignore_generic_error);
}

/* An XPath context that reports its errors into ctx->lastError without printing them. */
static inline xmlXPathContextPtr cxml2_new_xpath_context(xmlDocPtr doc) {
    xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
    if (ctx != NULL) {
        ctx->error = cxml2_ignore_structured_error;
        ctx->userData = NULL;
    }
    return ctx;
}

/* xmlFree is a macro over a function-pointer global that Swift cannot call directly. */
static inline void cxml2_free(void *pointer) {
    xmlFree(pointer);
}

static inline void cxml2_free_string(xmlChar *string) {
    if (string != NULL) xmlFree(string);
}
#endif
