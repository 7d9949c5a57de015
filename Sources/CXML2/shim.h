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
#include "../CLazyLibrary/lazy_library.h"

/* libxml2 is bound at run time, on first use, rather than linked (Sources/CLazyLibrary/lazy_library.h, the same
 * way as libcurl in Sources/CCurl/shim.h).
 *
 * Linked, it was loaded at every start of the program with ICU, liblzma and zlib behind it, their
 * relocations applied and their pages touched, by commands that never read HTML (`cookie`, `status`,
 * `jar header`). So nothing here references a libxml2 symbol directly: every wrapper below calls through the
 * table `cxml2()` returns. The module map links nothing, and the headers' folder comes from Package.swift
 * (`libxml2Headers`), not pkg-config, whose `-lxml2` would link the library again. XMLQuery checks
 * `cxml2_load_error()` before any other call (LibXML.prepare). Its dependencies (ICU among them) stay away from
 * the copy of ICU inside Foundation (lazy_library_open's RTLD_LOCAL). */

/* Each entry point XMLQuery calls, by its libxml2 name; and xmlFree, a variable holding libxml2's deallocator
 * (a macro over it in threaded builds, hence a field name of its own). */
#define CXML2_ENTRY_POINTS(FUNCTION, VARIABLE) \
    FUNCTION(xmlInitParser) \
    FUNCTION(htmlReadMemory) \
    FUNCTION(htmlCtxtReadMemory) \
    FUNCTION(htmlNewParserCtxt) \
    FUNCTION(htmlFreeParserCtxt) \
    FUNCTION(xmlReadMemory) \
    FUNCTION(xmlFreeDoc) \
    FUNCTION(xmlGetLastError) \
    FUNCTION(xmlResetError) \
    FUNCTION(xmlResetLastError) \
    FUNCTION(xmlGetProp) \
    FUNCTION(xmlHasProp) \
    FUNCTION(xmlXPathCastNodeToString) \
    FUNCTION(xmlXPathCastToString) \
    FUNCTION(xmlXPathCompiledEval) \
    FUNCTION(xmlXPathCtxtCompile) \
    FUNCTION(xmlXPathFreeCompExpr) \
    FUNCTION(xmlXPathFreeContext) \
    FUNCTION(xmlXPathFreeObject) \
    FUNCTION(xmlXPathNewContext) \
    FUNCTION(xmlSetStructuredErrorFunc) \
    FUNCTION(xmlSetGenericErrorFunc) \
    VARIABLE(free_function, "xmlFree", xmlFreeFunc)

/* libxml2's ABI 2 (every libxml2 since 2.0), from Debian's libxml2 package. */
LAZY_LIBRARY(cxml2, "libxml2.so.2", "libxml2", CXML2_ENTRY_POINTS)

static inline void cxml2_xmlInitParser(void) { cxml2()->xmlInitParser(); }
static inline htmlDocPtr cxml2_htmlReadMemory(const char *buffer, int size, const char *url, const char *encoding, int options) {
    return cxml2()->htmlReadMemory(buffer, size, url, encoding, options);
}
static inline htmlDocPtr cxml2_htmlCtxtReadMemory(htmlParserCtxtPtr context, const char *buffer, int size, const char *url,
                                                  const char *encoding, int options) {
    return cxml2()->htmlCtxtReadMemory(context, buffer, size, url, encoding, options);
}
static inline htmlParserCtxtPtr cxml2_htmlNewParserCtxt(void) { return cxml2()->htmlNewParserCtxt(); }
static inline void cxml2_htmlFreeParserCtxt(htmlParserCtxtPtr context) { cxml2()->htmlFreeParserCtxt(context); }
static inline xmlDocPtr cxml2_xmlReadMemory(const char *buffer, int size, const char *url, const char *encoding, int options) {
    return cxml2()->xmlReadMemory(buffer, size, url, encoding, options);
}
static inline void cxml2_xmlFreeDoc(xmlDocPtr document) { cxml2()->xmlFreeDoc(document); }
static inline const xmlError *cxml2_xmlGetLastError(void) { return cxml2()->xmlGetLastError(); }
static inline void cxml2_xmlResetError(xmlErrorPtr error) { cxml2()->xmlResetError(error); }
static inline void cxml2_xmlResetLastError(void) { cxml2()->xmlResetLastError(); }
static inline xmlChar *cxml2_xmlGetProp(const xmlNode *node, const xmlChar *name) { return cxml2()->xmlGetProp(node, name); }
static inline xmlAttrPtr cxml2_xmlHasProp(const xmlNode *node, const xmlChar *name) { return cxml2()->xmlHasProp(node, name); }
static inline xmlChar *cxml2_xmlXPathCastNodeToString(xmlNodePtr node) { return cxml2()->xmlXPathCastNodeToString(node); }
static inline xmlChar *cxml2_xmlXPathCastToString(xmlXPathObjectPtr object) { return cxml2()->xmlXPathCastToString(object); }
static inline xmlXPathObjectPtr cxml2_xmlXPathCompiledEval(xmlXPathCompExprPtr compiled, xmlXPathContextPtr context) {
    return cxml2()->xmlXPathCompiledEval(compiled, context);
}
static inline xmlXPathCompExprPtr cxml2_xmlXPathCtxtCompile(xmlXPathContextPtr context, const xmlChar *expression) {
    return cxml2()->xmlXPathCtxtCompile(context, expression);
}
static inline void cxml2_xmlXPathFreeCompExpr(xmlXPathCompExprPtr compiled) { cxml2()->xmlXPathFreeCompExpr(compiled); }
static inline void cxml2_xmlXPathFreeContext(xmlXPathContextPtr context) { cxml2()->xmlXPathFreeContext(context); }
static inline void cxml2_xmlXPathFreeObject(xmlXPathObjectPtr object) { cxml2()->xmlXPathFreeObject(object); }

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
    cxml2()->xmlSetStructuredErrorFunc(NULL, cxml2_ignore_structured_error);
    cxml2()->xmlSetGenericErrorFunc(NULL, cxml2_ignore_generic_error);
}

/* An XPath context that reports its errors into ctx->lastError without printing them. */
static inline xmlXPathContextPtr cxml2_new_xpath_context(xmlDocPtr doc) {
    xmlXPathContextPtr ctx = cxml2()->xmlXPathNewContext(doc);
    if (ctx != NULL) {
        ctx->error = cxml2_ignore_structured_error;
        ctx->userData = NULL;
    }
    return ctx;
}

/* Frees a string libxml2 allocated, through its own deallocator. */
static inline void cxml2_free_string(xmlChar *string) {
    if (string != NULL) (*cxml2()->free_function)(string);
}
#endif
