// The floor for a login built on libcurl: the demo site's 3-request login (GET /login, POST /login,
// GET /api/me) done with plain libcurl easy handles, one thread per concurrent login, libcurl's own
// cookie engine on. Prints one line of JSON: logins, wall seconds, CPU seconds (user + system).
//
// usage: curl-login-floor BASE_URL LOGINS CONCURRENCY [USER PASSWORD]
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    char *data;
    size_t length;
    size_t capacity;
} buffer_t;

typedef struct {
    const char *base;
    const char *user;
    const char *password;
    int logins;
    int failures;
} worker_t;

static size_t collect(char *chunk, size_t size, size_t count, void *userdata) {
    buffer_t *buffer = userdata;
    size_t bytes = size * count;
    if (buffer->length + bytes + 1 > buffer->capacity) {
        size_t capacity = (buffer->capacity + bytes + 1) * 2;
        char *grown = realloc(buffer->data, capacity);
        if (!grown) return 0;
        buffer->data = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->data + buffer->length, chunk, bytes);
    buffer->length += bytes;
    buffer->data[buffer->length] = 0;
    return bytes;
}

// Finds the value attribute of the <input name="csrf"> tag.
static int extract_csrf(const char *html, char *out, size_t out_size) {
    const char *name = strstr(html, "name=\"csrf\"");
    if (!name) return -1;
    const char *tag_start = name;
    while (tag_start > html && *tag_start != '<') tag_start--;
    const char *tag_end = strchr(name, '>');
    if (!tag_end) return -1;
    const char *value = strstr(tag_start, "value=\"");
    if (!value || value > tag_end) return -1;
    value += 7;
    const char *quote = strchr(value, '"');
    if (!quote || (size_t)(quote - value) >= out_size) return -1;
    memcpy(out, value, quote - value);
    out[quote - value] = 0;
    return 0;
}

static long perform(CURL *curl, buffer_t *body) {
    body->length = 0;
    if (body->data) body->data[0] = 0;
    if (curl_easy_perform(curl) != CURLE_OK) return -1;
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

static void *run_worker(void *argument) {
    worker_t *worker = argument;
    CURL *curl = curl_easy_init();
    buffer_t body = {0};
    char url[1024], form[2048], csrf[256];
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_COOKIEFILE, "");
    for (int i = 0; i < worker->logins; i++) {
        curl_easy_setopt(curl, CURLOPT_COOKIELIST, "ALL");  // a fresh session per login
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
        snprintf(url, sizeof url, "%s/login", worker->base);
        curl_easy_setopt(curl, CURLOPT_URL, url);
        if (perform(curl, &body) != 200 || extract_csrf(body.data, csrf, sizeof csrf) != 0) { worker->failures++; continue; }

        char *user = curl_easy_escape(curl, worker->user, 0), *pass = curl_easy_escape(curl, worker->password, 0);
        char *token = curl_easy_escape(curl, csrf, 0);
        snprintf(form, sizeof form, "username=%s&password=%s&csrf=%s", user, pass, token);
        curl_free(user); curl_free(pass); curl_free(token);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form);
        if (perform(curl, &body) != 303) { worker->failures++; continue; }

        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
        snprintf(url, sizeof url, "%s/api/me", worker->base);
        curl_easy_setopt(curl, CURLOPT_URL, url);
        if (perform(curl, &body) != 200) worker->failures++;
    }
    free(body.data);
    curl_easy_cleanup(curl);
    return NULL;
}

static double seconds(struct timeval t) { return t.tv_sec + t.tv_usec / 1e6; }

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s BASE_URL LOGINS CONCURRENCY [USER PASSWORD]\n", argv[0]);
        return 2;
    }
    int logins = atoi(argv[2]), concurrency = atoi(argv[3]);
    if (logins <= 0 || concurrency <= 0) { fprintf(stderr, "LOGINS and CONCURRENCY must be positive\n"); return 2; }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_t threads[concurrency];
    worker_t workers[concurrency];
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int i = 0; i < concurrency; i++) {
        workers[i] = (worker_t){argv[1], argc > 4 ? argv[4] : "alice", argc > 5 ? argv[5] : "wonderland",
                                logins / concurrency + (i < logins % concurrency ? 1 : 0), 0};
        pthread_create(&threads[i], NULL, run_worker, &workers[i]);
    }
    int failures = 0;
    for (int i = 0; i < concurrency; i++) { pthread_join(threads[i], NULL); failures += workers[i].failures; }
    clock_gettime(CLOCK_MONOTONIC, &end);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double wall = (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9;
    printf("{\"client\":\"c-libcurl\",\"logins\":%d,\"failures\":%d,\"wall_s\":%.4f,\"cpu_s\":%.4f}\n", logins, failures,
           wall, seconds(usage.ru_utime) + seconds(usage.ru_stime));
    curl_global_cleanup();
    return failures ? 1 : 0;
}
